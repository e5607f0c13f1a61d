package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	bpebble "github.com/bitempo/bitempo/engine/pebble"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

var customers = TableDef{Name: "customers", Key: []KeyColumn{{Name: "id", Type: String}}}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()

	t.Run("missing store with MustExist or ReadOnly", func(t *testing.T) {
		for _, o := range []Options{{MustExist: true}, {ReadOnly: true}} {
			_, err := Open(filepath.Join(dir, "absent"), o)
			if !errors.Is(err, ErrNotExist) {
				t.Fatalf("%+v: got %v, want ErrNotExist", o, err)
			}
		}
	})

	t.Run("locked", func(t *testing.T) {
		p := filepath.Join(dir, "locked")
		db, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := Open(p, Options{}); !errors.Is(err, ErrLocked) {
			t.Fatalf("second open: got %v, want ErrLocked", err)
		}
		if _, err := Open(p, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
			t.Fatalf("read-only open of a locked store: got %v, want ErrLocked", err)
		}
	})

	t.Run("directory with other files", func(t *testing.T) {
		p := filepath.Join(dir, "home")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "notes.txt"), []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, Options{}); !errors.Is(err, ErrNotBitempo) {
			t.Fatalf("got %v, want ErrNotBitempo", err)
		}
		names, _ := os.ReadDir(p)
		if len(names) != 1 {
			t.Fatalf("open of a foreign directory wrote files: %v", names)
		}
	})

	t.Run("a file instead of a directory", func(t *testing.T) {
		p := filepath.Join(dir, "file")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, Options{}); err == nil {
			t.Fatal("opened a plain file as a store")
		}
	})

	t.Run("plain Pebble database", func(t *testing.T) {
		p := pebbleWithOneKey(t, nil) // Pebble's default comparer
		if _, err := Open(p, Options{}); !errors.Is(err, ErrNotBitempo) {
			t.Fatalf("got %v, want ErrNotBitempo", err)
		}
	})

	t.Run("newer format", func(t *testing.T) {
		p := filepath.Join(dir, "newer")
		db, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.commit([]engine.Write{{Key: layout.MetaFormat, Value: mustMarshal(uint64(layout.FormatVersion + 1))}}, true); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = Open(p, Options{})
		if !errors.Is(err, layout.ErrNewerFormat) {
			t.Fatalf("got %v, want layout.ErrNewerFormat", err)
		}
	})
}

func TestReadOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db")
	db, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(customers); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := Open(p, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Table("customers"); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.CreateTable(TableDef{Name: "x", Key: customers.Key}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("CreateTable on read-only store: %v", err)
	}
	if _, err := ro.BeginWrite(sealed.Key{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("BeginWrite on read-only store: %v", err)
	}
}

func TestCatalog(t *testing.T) {
	fs := vfs.NewMem()
	db, err := openOn("db", bpebble.Options{FS: fs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	def := TableDef{
		Name: "contracts", Kind: Changes, Axis: AxisDate,
		Key:         []KeyColumn{{Name: "user", Type: Int64}, {Name: "contract", Type: String}},
		TrackExcept: []string{"note"}, Compare: map[string]CompareOptions{"amount": {Round: true, Scale: 2}},
	}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(customers); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(customers); !errors.Is(err, ErrTableExists) {
		t.Fatalf("duplicate table: %v", err)
	}
	for _, bad := range []TableDef{
		{Name: "", Key: customers.Key},
		{Name: "nokey"},
		{Name: "dupcol", Key: []KeyColumn{{Name: "a", Type: String}, {Name: "a", Type: String}}},
		{Name: "both", Key: customers.Key, Track: []string{"x"}, TrackExcept: []string{"y"}},
		{Name: "keytracked", Key: customers.Key, Track: []string{"id"}},
		{Name: "badtype", Key: []KeyColumn{{Name: "a", Type: 9}}},
	} {
		if _, err := db.CreateTable(bad); !errors.Is(err, ErrInvalidTable) {
			t.Errorf("%q: got %v, want ErrInvalidTable", bad.Name, err)
		}
	}
	db.Close()

	db, err = openOn("db", bpebble.Options{FS: fs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := []string{}
	for _, tb := range db.Tables() {
		names = append(names, tb.Name)
	}
	if strings.Join(names, ",") != "contracts,customers" {
		t.Fatalf("tables after reopen: %v", names)
	}
	c, err := db.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != Changes || c.Axis != AxisDate || c.Tracked("note") || !c.Tracked("amount") || !c.Compare["amount"].Round {
		t.Fatalf("definition did not survive reopen: %+v", c.TableDef)
	}
	if _, err := db.Table("nope"); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("unknown table: %v", err)
	}
	for _, key := range []Key{{int64(1)}, {"x", "y"}, {"1", "y"}, {int64(1), 2}} {
		if _, err := c.AppendKey(nil, key); !errors.Is(err, ErrKeyShape) {
			t.Errorf("key %v: got %v, want ErrKeyShape", key, err)
		}
	}
	if _, err := c.AppendKey(nil, Key{7, "x"}); err != nil {
		t.Errorf("int for an int64 column: %v", err)
	}
}

// commitOne asserts one version through a Writer and returns the commit's tx.
func commitOne(t *testing.T, db *DB, tb *Table, id string, from int64) int64 {
	t.Helper()
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	tuple, _ := tb.AppendKey(nil, Key{id})
	v := tb.NewVersion(Key{id}, tuple, from, Infinity, w.AllocSK(tb), Attrs{"n": int64(from)})
	if err := w.Assert(tb, v); err != nil {
		t.Fatal(err)
	}
	tx := w.Tx()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestTxTimeMonotonicAcrossRestarts(t *testing.T) {
	fs := vfs.NewMem()
	now := int64(1_000_000)
	clock := func() int64 { return now }
	db, err := openOn("db", bpebble.Options{FS: fs}, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(customers)
	tx1 := commitOne(t, db, tb, "a", 1)
	if tx1 != now {
		t.Fatalf("first tx %d, want the clock %d", tx1, now)
	}
	tx2 := commitOne(t, db, tb, "b", 1) // same clock reading
	if tx2 != tx1+1 {
		t.Fatalf("second tx %d, want %d", tx2, tx1+1)
	}
	db.Close()

	now = 5 // the wall clock stepped back
	db, err = openOn("db", bpebble.Options{FS: fs}, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.LastTx() != tx2 {
		t.Fatalf("LastTx after reopen %d, want %d", db.LastTx(), tx2)
	}
	tb, _ = db.Table("customers")
	tx3 := commitOne(t, db, tb, "c", 1)
	if tx3 != tx2+1 {
		t.Fatalf("tx after the clock stepped back: %d, want %d", tx3, tx2+1)
	}
	now = 9_000_000
	if tx4 := commitOne(t, db, tb, "d", 1); tx4 != now {
		t.Fatalf("tx after the clock moved on: %d, want %d", tx4, now)
	}
	// Surrogate keys continued across the restart too.
	s, _ := db.Snapshot()
	defer s.Close()
	tuple, _ := tb.AppendKey(nil, Key{"c"})
	v, reason, err := s.VersionAt(tb, tuple, 1, Infinity)
	if err != nil || reason != Found || v.SK != 3 {
		t.Fatalf("sk after restart: %v %v %v, want sk 3", v, reason, err)
	}
	rep, err := Verify(db)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
}

func TestAbortedWriterLeavesNothing(t *testing.T) {
	db, err := Open("db", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(customers)
	w, _ := db.BeginWrite(sealed.Key{})
	tuple, _ := tb.AppendKey(nil, Key{"x"})
	if err := w.Assert(tb, tb.NewVersion(Key{"x"}, tuple, 0, 10, w.AllocSK(tb), nil)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if db.LastTx() != 0 {
		t.Fatal("aborted writer moved LastTx")
	}
	if tx := commitOne(t, db, tb, "y", 0); tx == 0 {
		t.Fatal("writer after abort did not commit")
	}
	s, _ := db.Snapshot()
	defer s.Close()
	vs, err := s.KeyVersions(tb, tuple, Infinity)
	if err != nil || len(vs) != 0 {
		t.Fatalf("aborted write is visible: %v %v", vs, err)
	}
}

// TestVerifyFindsDamage breaks records with raw writes and checks that Verify
// names the table, key and invariant.
func TestVerifyFindsDamage(t *testing.T) {
	cases := []struct {
		name      string
		invariant int
		damage    func(t *testing.T, db *DB, tb *Table) []engine.Write
	}{
		{"overlapping current records", 2, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			tuple, _ := tb.AppendKey(nil, Key{"a"})
			val, _ := encoding.AppendRecordPositionalAt(nil, &encoding.RecordValue{ValidTo: 50, TxCommit: testLastCommit(t, db), TxTo: Infinity, SK: 1}, 5, nil)
			return []engine.Write{{Key: layout.CurrentKeys.Key(nil, tb.ID, tuple, 5, 0), Value: val}}
		}},
		{"inverted valid period", 1, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			tuple, _ := tb.AppendKey(nil, Key{"a"})
			val, _ := encoding.AppendRecordPositionalAt(nil, &encoding.RecordValue{ValidTo: 1, TxCommit: testLastCommit(t, db), TxTo: Infinity, SK: 1}, 1, nil)
			return []engine.Write{{Key: layout.CurrentKeys.Key(nil, tb.ID, tuple, 1, 0), Value: val}}
		}},
		{"record newer than the last commit", 4, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			// A commit number the meta does not count, at a time after the
			// last transaction time, and a record asserted by it.
			tuple, _ := tb.AppendKey(nil, Key{"a"})
			n := testLastCommit(t, db) + 1
			val, _ := encoding.AppendRecordPositionalAt(nil, &encoding.RecordValue{ValidTo: Infinity, TxCommit: n, TxTo: Infinity, SK: 1}, 1, nil)
			return []engine.Write{{Key: layout.CurrentKeys.Key(nil, tb.ID, tuple, 1, 0), Value: val},
				{Key: layout.CommitKey(n), Value: layout.CommitValue(db.LastTx() + 100)}}
		}},
		{"surrogate key shared by two keys", 3, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			tuple, _ := tb.AppendKey(nil, Key{"b"})
			val, _ := encoding.AppendRecordPositionalAt(nil, &encoding.RecordValue{ValidTo: Infinity, TxCommit: testLastCommit(t, db), TxTo: Infinity, SK: 1}, 1, nil)
			return []engine.Write{{Key: layout.CurrentKeys.Key(nil, tb.ID, tuple, 1, 0), Value: val}}
		}},
		{"missing sk index entry", 5, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			return []engine.Write{{Key: layout.SKIndexKeys.Key(nil, tb.ID, 1, db.LastTx()), Delete: true}}
		}},
		{"garbage value", 0, func(t *testing.T, db *DB, tb *Table) []engine.Write {
			tuple, _ := tb.AppendKey(nil, Key{"a"})
			return []engine.Write{{Key: layout.CurrentKeys.Key(nil, tb.ID, tuple, 1, 0), Value: []byte{0xc1, 0xff, 0x00}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open("db", Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tb, _ := db.CreateTable(customers)
			commitOne(t, db, tb, "a", 1)
			if rep, err := Verify(db); err != nil || !rep.OK() {
				t.Fatalf("clean store: %v %v", rep, err)
			}
			if err := db.commit(c.damage(t, db, tb), true); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(db)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range rep.Problems {
				if p.Invariant == c.invariant && p.Table == "customers" {
					found = true
				}
			}
			if !found {
				t.Fatalf("no problem for invariant %d in:\n%s", c.invariant, rep)
			}
		})
	}
}

// TestCompact checks that Compact leaves every record readable and the store
// valid while a snapshot taken before it is still open, and that it is refused
// on read-only and closed stores.
func TestCompact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db")
	db, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(customers)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 300
	for i := range keys {
		commitOne(t, db, tb, fmt.Sprintf("k%04d", i), int64(i))
	}
	before, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// A writer commits while the compaction runs, as Compact's doc allows.
	written := make(chan error, 1)
	go func() {
		var err error
		for i := range 50 {
			w, berr := db.BeginWrite(sealed.Key{})
			if berr != nil {
				err = berr
				break
			}
			id := fmt.Sprintf("w%04d", i)
			tuple, _ := tb.AppendKey(nil, Key{id})
			if err = w.Assert(tb, tb.NewVersion(Key{id}, tuple, 0, Infinity, w.AllocSK(tb), Attrs{"n": int64(i)})); err != nil {
				w.Abort()
				break
			}
			if err = w.Commit(); err != nil {
				break
			}
		}
		written <- err
	}()
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatalf("commit during Compact: %v", err)
	}
	after, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Snapshot{before, after} {
		for i := range keys {
			tuple, _ := tb.AppendKey(nil, Key{fmt.Sprintf("k%04d", i)})
			vs, err := s.KeyVersions(tb, tuple, Infinity)
			if err != nil || len(vs) != 1 || vs[0].ValidFrom != int64(i) || vs[0].Attrs["n"] != int64(i) {
				t.Fatalf("key %d after Compact: %+v, %v", i, vs, err)
			}
		}
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("Verify after Compact: %v %v", rep, err)
	}
	before.Close()
	after.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact on a closed store: %v, want ErrClosed", err)
	}
	ro, err := Open(p, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Compact(context.Background()); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Compact on a read-only store: %v, want ErrReadOnly", err)
	}
}

// TestCloseWithOpenSnapshot checks that Close refuses, without closing, while a
// snapshot is open, and succeeds once it is closed.
func TestCloseWithOpenSnapshot(t *testing.T) {
	db, err := Open("db", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(customers)
	commitOne(t, db, tb, "a", 0)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tuple, _ := tb.AppendKey(nil, Key{"a"})
	if _, err := s.KeyVersions(tb, tuple, Infinity); err != nil { // caches an iterator
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrSnapshotsOpen) {
		t.Fatalf("Close with an open snapshot: %v, want ErrSnapshotsOpen", err)
	}
	if vs, err := s.KeyVersions(tb, tuple, Infinity); err != nil || len(vs) != 1 {
		t.Fatalf("snapshot after refused Close: %v %v", vs, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close after the snapshot closed: %v", err)
	}
}

// TestCloseDuringCompact closes a store while a compaction may be running:
// Close waits for it, and Compact either finishes or finds the store closed.
func TestCloseDuringCompact(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(customers)
	for i := range 200 {
		commitOne(t, db, tb, fmt.Sprintf("k%04d", i), int64(i))
	}
	compacted := make(chan error, 1)
	go func() { compacted <- db.Compact(context.Background()) }()
	if err := db.Close(); err != nil {
		t.Fatalf("Close during Compact: %v", err)
	}
	if err := <-compacted; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact racing Close: %v, want nil or ErrClosed", err)
	}
}

// openOn opens the store in dir on a Pebble engine opened with popts.
func openOn(dir string, popts bpebble.Options, opts Options) (*DB, error) {
	popts.ReadOnly, popts.MustExist = opts.ReadOnly, opts.MustExist
	e, err := bpebble.Open(dir, popts)
	if err != nil {
		return nil, err
	}
	return OpenEngine(e, dir, opts)
}

// testLastCommit returns the number of db's newest commit.
func testLastCommit(t *testing.T, db *DB) uint64 {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := readLastCommit(s.view)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
