package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/layout"
)

// copyFixture copies a checked-in store into a fresh directory and returns it
// with the contents of its files.
func copyFixture(t *testing.T, name string) (string, map[string]string) {
	t.Helper()
	src := filepath.Join("testdata", name)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, dirContents(t, dir)
}

func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// A store written by an older format is refused, read-write or read-only,
// with an error that names its format and the way to move its data, and its
// directory is left exactly as it was: format 1, moved by its build's scan
// and a load, and format 2 (before commit numbers: a current record holding
// its transaction time), moved by its build's full export and this build's
// import.
func TestOpenOlderFormatRefused(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		found   uint64
		says    []string
	}{
		{"format1", 1, []string{"store format 1", "bitempo scan NAME --format json", "bitempo load NAME FILE",
			"bitempo export --all --history", "bitempo import"}},
		{"format2", 2, []string{"store format 2", "with the bitempo version that wrote it",
			"bitempo export --all --history", "bitempo import DIR --db NEW"}},
	} {
		for _, opts := range []Options{{}, {ReadOnly: true}, {MustExist: true}} {
			dir, before := copyFixture(t, tc.fixture)
			db, err := Open(dir, opts)
			if err == nil {
				db.Close()
				t.Fatalf("%s %+v: opened a store of an older format", tc.fixture, opts)
			}
			if !errors.Is(err, layout.ErrFormat) || errors.Is(err, layout.ErrNewerFormat) {
				t.Fatalf("%s %+v: got %v, want layout.ErrFormat (and not layout.ErrNewerFormat)", tc.fixture, opts, err)
			}
			var fe *layout.FormatError
			if !errors.As(err, &fe) || fe.Found != tc.found || fe.Want != layout.FormatVersion || fe.Dir != dir || fe.Comparer != "" {
				t.Fatalf("%s %+v: got %#v, want a *layout.FormatError of format %d", tc.fixture, opts, fe, tc.found)
			}
			for _, want := range append(tc.says, fmt.Sprintf("reads only format %d", layout.FormatVersion), "not changed") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s %+v: message %q lacks %q", tc.fixture, opts, err, want)
				}
			}
			if after := dirContents(t, dir); !maps.Equal(before, after) {
				t.Fatalf("%s %+v: the refused store's directory changed: %d files before, %d after", tc.fixture, opts, len(before), len(after))
			}
		}
	}
}

// A store written by a development build of format 2 is refused before
// Pebble opens it, read-write or read-only, with a *layout.FormatError that names the
// comparer it found and says how to move its data; its directory is left
// exactly as it was. Two such builds: one with Pebble's default comparer, and
// one with an earlier layout of bitempo's own (bitempo.layout.v2: 4-byte table
// ids).
func TestOpenFormat2DevRefused(t *testing.T) {
	for _, tc := range []struct{ fixture, comparer, named string }{
		{"format2dev", "leveldb.BytewiseComparator", "leveldb.BytewiseComparator"},
		{"format2v2", "bitempo.layout.v2", `"bitempo.layout.v2"`},
	} {
		for _, opts := range []Options{{}, {ReadOnly: true}, {MustExist: true}} {
			dir, before := copyFixture(t, tc.fixture)
			db, err := Open(dir, opts)
			if err == nil {
				db.Close()
				t.Fatalf("%s %+v: opened a store of a development layout", tc.fixture, opts)
			}
			if !errors.Is(err, layout.ErrFormat) || errors.Is(err, layout.ErrNewerFormat) {
				t.Fatalf("%s %+v: got %v, want layout.ErrFormat (and not layout.ErrNewerFormat)", tc.fixture, opts, err)
			}
			var fe *layout.FormatError
			if !errors.As(err, &fe) || fe.Found != layout.DevFormatVersion || fe.Want != layout.FormatVersion || fe.Dir != dir ||
				fe.Comparer != tc.comparer {
				t.Fatalf("%s %+v: got %#v, want a *layout.FormatError of the development format 2", tc.fixture, opts, fe)
			}
			for _, want := range []string{"store format 2 as written by a development build", tc.named,
				layout.ComparerName, "not changed", "bitempo export --all --history", "bitempo import"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s %+v: message %q lacks %q", tc.fixture, opts, err, want)
				}
			}
			if after := dirContents(t, dir); !maps.Equal(before, after) {
				t.Fatalf("%s %+v: the refused store's directory changed: %d files before, %d after", tc.fixture, opts, len(before), len(after))
			}
		}
	}
}

// A Pebble database ordered by the comparer of any earlier development layout
// of format 2 (whose keys or values this build would misread) is refused
// before Pebble opens it with a *layout.FormatError that names the comparer
// and the way out, and its directory is left as it was.
func TestOpenEarlierLayoutComparerRefused(t *testing.T) {
	for _, name := range layout.DevComparerNames {
		c := *pebble.DefaultComparer
		c.Name = name
		dir := pebbleWithOneKey(t, &c)
		before := dirContents(t, dir)
		db, err := Open(dir, Options{})
		if err == nil {
			db.Close()
			t.Fatalf("%s: opened a store of an earlier layout", name)
		}
		var fe *layout.FormatError
		if !errors.As(err, &fe) || fe.Comparer != name || !strings.Contains(err.Error(), "bitempo export --all --history") {
			t.Fatalf("%s: got %v, want a *layout.FormatError naming the comparer and the way out", name, err)
		}
		if after := dirContents(t, dir); !maps.Equal(before, after) {
			t.Fatalf("%s: the refused store's directory changed", name)
		}
	}
}

// pebbleWithOneKey returns the directory of a new Pebble database ordered by
// cmp (nil: Pebble's default) that holds one key.
func pebbleWithOneKey(t *testing.T, cmp *pebble.Comparer) string {
	t.Helper()
	dir := t.TempDir()
	pdb, err := pebble.Open(dir, &pebble.Options{Comparer: cmp})
	if err != nil {
		t.Fatal(err)
	}
	if err := pdb.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := pdb.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A Pebble database of another application (another comparer, or the
// default one without bitempo's format marker) is not a bitempo store.
func TestOpenForeignComparer(t *testing.T) {
	for _, cmp := range []*pebble.Comparer{pebble.DefaultComparer, func() *pebble.Comparer {
		c := *pebble.DefaultComparer
		c.Name = "someone.else"
		return &c
	}()} {
		db, err := Open(pebbleWithOneKey(t, cmp), Options{})
		if err == nil {
			db.Close()
			t.Fatalf("%s: opened a foreign database", cmp.Name)
		}
		if !errors.Is(err, ErrNotBitempo) {
			t.Fatalf("%s: got %v, want ErrNotBitempo", cmp.Name, err)
		}
	}
}

// A store whose meta "layout" does not name this build's layout, or that has
// none (as on an engine that records no comparer, written before the marker
// existed), is refused with a *layout.FormatError naming what it found.
func TestOpenOtherLayoutRefused(t *testing.T) {
	for _, c := range []struct {
		value []byte // nil: the marker deleted
		want  string
	}{
		{nil, "bitempo.layout.v2"},
		{mustMarshal("bitempo.layout.v4"), "bitempo.layout.v4"},
		{mustMarshal("bitempo.layout.v9"), "bitempo.layout.v9"},
	} {
		dir := t.TempDir()
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.RawSet(sealed.Key{}, layout.MetaLayout, c.value); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(dir, Options{})
		if err == nil {
			db.Close()
			t.Fatalf("%s: opened a store of another layout", c.want)
		}
		var fe *layout.FormatError
		if !errors.Is(err, layout.ErrFormat) || !errors.As(err, &fe) || fe.Comparer != c.want || fe.Found != layout.FormatVersion ||
			!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bitempo export --all --history") {
			t.Fatalf("%s: got %v (%#v)", c.want, err, fe)
		}
	}
}
