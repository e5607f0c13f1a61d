package txn_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestSizeLimits writes attributes that encode to exactly store.MaxAttrsSize
// bytes and one byte more, to a periods table and a changes table. At the
// limit the write commits and the key can be read, overwritten and deleted; one
// byte over, the operation fails with ErrTooLarge (and ErrInvalidAttr) and
// nothing is written. Before, a value over the decoders' limit committed and
// left its key unreadable and impossible to overwrite or delete. It moves
// 64 MiB values around, so it runs only with BITEMPO_LONG=1 and without -short.
func TestSizeLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB values")
	}
	testlong.Skip(t, "writes 64 MiB values")
	db, err := store.Open("db", store.Options{InMemory: true, NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, def := range []store.TableDef{
		{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}}},
		{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes},
	} {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	// The encoding's overhead around a long string attribute "v".
	probe, err := encoding.AppendAttrs(nil, store.Attrs{"v": strings.Repeat("x", 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	atLimit := store.MaxAttrsSize - (len(probe) - 1<<20)
	value := func(n int, c byte) store.Attrs { return store.Attrs{"v": strings.Repeat(string(c), n)} }
	if enc, _ := encoding.AppendAttrs(nil, value(atLimit, 'a')); len(enc) != store.MaxAttrsSize {
		t.Fatalf("probe: %d bytes, want %d", len(enc), store.MaxAttrsSize)
	}

	before := rawDump(t, db)
	overs := map[string]func(tx *txn.Tx) error{
		"Put": func(tx *txn.Tx) error {
			return tx.Put("p", store.Key{"k"}, value(atLimit+1, 'a'), 0, 100)
		},
		"Upsert": func(tx *txn.Tx) error {
			_, err := tx.Upsert("p", store.Key{"k"}, value(atLimit+1, 'a'), 0)
			return err
		},
		"Apply": func(tx *txn.Tx) error {
			_, err := tx.Apply("c", "b1", []txn.Event{{Key: store.Key{"k"}, At: 5, Op: txn.OpUpsert, Attrs: value(atLimit+1, 'a')}})
			return err
		},
	}
	for name, fn := range overs {
		_, err := txn.Update(db, fn)
		if !errors.Is(err, store.ErrTooLarge) || !errors.Is(err, txn.ErrInvalidAttr) {
			t.Fatalf("%s one byte over the limit: got %v, want ErrTooLarge", name, err)
		}
		sameDump(t, name+" over the limit", rawDump(t, db), before)
	}

	// At the limit: write, read, overwrite, delete.
	mustUpdate(t, db, func(tx *txn.Tx) error { return tx.Put("p", store.Key{"k"}, value(atLimit, 'a'), 0, 100) })
	mustUpdate(t, db, func(tx *txn.Tx) error {
		_, err := tx.Apply("c", "b2", []txn.Event{{Key: store.Key{"k"}, At: 5, Op: txn.OpUpsert, Attrs: value(atLimit, 'a')}})
		return err
	})
	readV := func(table string) string {
		t.Helper()
		var got string
		if err := txn.View(db, func(s *store.Snapshot) error {
			tb, _ := s.Table(table)
			tuple, _ := tb.AppendKey(nil, store.Key{"k"})
			v, reason, err := s.VersionAt(tb, tuple, 50, store.Infinity)
			if err != nil || reason != store.Found {
				return errors.Join(err, errors.New(reason.String()))
			}
			got, _ = v.Attrs["v"].(string)
			return nil
		}); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		return got
	}
	if got := readV("p"); got != value(atLimit, 'a')["v"] {
		t.Fatalf("read back %d bytes", len(got))
	}
	if got := readV("c"); got != value(atLimit, 'a')["v"] {
		t.Fatalf("changes table: read back %d bytes", len(got))
	}
	mustUpdate(t, db, func(tx *txn.Tx) error { return tx.Put("p", store.Key{"k"}, value(atLimit, 'b'), 0, 100) })
	if got := readV("p"); got != value(atLimit, 'b')["v"] {
		t.Fatal("the overwrite did not take")
	}
	mustUpdate(t, db, func(tx *txn.Tx) error { return tx.Delete("p", store.Key{"k"}, 0, 100) })
	testutil.Verify(t, db)

	// The store refuses any value over the decoders' limit, whatever path
	// writes it.
	big := make([]byte, store.MaxValueSize+1)
	if err := db.RawWrite(sealed.Key{}, store.RawKV{Key: []byte{0xf0}, Value: big}); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("raw write over the limit: %v", err)
	}
	if err := db.RawWrite(sealed.Key{}, store.RawKV{Key: []byte{0xf0}, Value: big[:store.MaxValueSize]}); err != nil {
		t.Fatalf("raw write at the limit: %v", err)
	}
}
