package txn_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// These tests prove that a transaction that fails midway leaves no trace: the
// store's raw contents (every Pebble key and value, in every keyspace) are byte
// for byte what they were, and the next transaction behaves exactly as if the
// failed one had never run (same transaction time, same surrogate keys).

// atomicClock is a deterministic wall clock, so that twin stores fed the same
// transactions hold the same bytes.
func atomicClock() func() int64 {
	now := int64(1_000)
	return func() int64 { now++; return now }
}

// atomicOpen opens a store on fsys with the tables the tests write.
func atomicOpen(t *testing.T, fsys vfs.FS) *store.DB {
	t.Helper()
	db, err := storetest.Open("db", pebble.Options{FS: fsys}, store.Options{Clock: atomicClock(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []store.TableDef{
		{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Track: []string{"city"}},
		{Name: "prices", Key: []store.KeyColumn{{Name: "sku", Type: store.Int64}}},
	} {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// atomicBase is the history every test starts from.
func atomicBase(tx *txn.Tx) error {
	for i, city := range []string{"Oslo", "Bergen", "Molde"} {
		key := store.Key{fmt.Sprintf("c%d", i)}
		if _, err := tx.Upsert("customers", key, store.Attrs{"city": city, "tier": i}, 10); err != nil {
			return err
		}
	}
	return tx.Put("prices", store.Key{int64(7)}, store.Attrs{"amount": 1.5}, 0, 100)
}

// atomicWrites touches every kind of record: a split, an upsert that closes a
// version, an overwrite in place, a delete, a DeleteAt, a new key and a new
// attribute name.
func atomicWrites(tx *txn.Tx) error {
	steps := []func() error{
		func() error { return tx.Put("prices", store.Key{int64(7)}, store.Attrs{"amount": 2.5}, 40, 60) },
		func() error {
			_, err := tx.Upsert("customers", store.Key{"c0"}, store.Attrs{"city": "Tromsø"}, 20)
			return err
		},
		func() error {
			_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Bergen", "tier": 9}, 30)
			return err
		},
		func() error { return tx.Delete("customers", store.Key{"c2"}, 15, 25) },
		func() error { _, err := tx.DeleteAt("customers", store.Key{"c2"}, 50); return err },
		func() error {
			return tx.Put("prices", store.Key{int64(8)}, store.Attrs{"amount": 3, "currency": "NOK"}, 0, 10)
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// rawDump returns every key and value of the store, as one string per entry.
func rawDump(t *testing.T, db *store.DB) []string {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if string(kv.Key) == "\x01erase_secret" {
			continue // random per store: twins differ there by design
		}
		out = append(out, fmt.Sprintf("%x = %x", kv.Key, kv.Value))
	}
	if len(out) == 0 {
		t.Fatal("empty dump")
	}
	return out
}

// sameDump fails the test unless two dumps are identical, naming the first
// difference.
func sameDump(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: stores differ at entry %d of %d/%d:\n got %s\nwant %s", what, i, len(got), len(want), g, w)
		}
	}
}

func mustUpdate(t *testing.T, db *store.DB, fn func(*txn.Tx) error) txn.Commit {
	t.Helper()
	c, err := txn.Update(db, fn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var errAtomic = errors.New("atomic test: give up")

// TestFailedTransactionLeavesNoTrace runs transactions that fail after writing
// (by returning an error, by panicking, by passing on an operation's error) on
// one store and nothing on its twin; both must hold the same bytes before and
// after the twins run the same successful transaction.
func TestFailedTransactionLeavesNoTrace(t *testing.T) {
	for _, c := range []struct {
		name string
		fn   func(tx *txn.Tx) error
	}{
		{"error after writes", func(tx *txn.Tx) error {
			if err := atomicWrites(tx); err != nil {
				return err
			}
			return errAtomic
		}},
		{"panic after writes", func(tx *txn.Tx) error {
			if err := atomicWrites(tx); err != nil {
				return err
			}
			panic(errAtomic)
		}},
		{"panic between writes", func(tx *txn.Tx) error {
			if err := tx.Put("prices", store.Key{int64(7)}, store.Attrs{"amount": 9}, 0, 100); err != nil {
				return err
			}
			var attrs store.Attrs
			//lint:ignore SA5000 the nil map write is the point: a genuine runtime panic
			attrs["boom"] = 1 // a nil map write: a genuine runtime panic mid-transaction
			return nil
		}},
		{"operation error passed on", func(tx *txn.Tx) error {
			if err := atomicWrites(tx); err != nil {
				return err
			}
			return tx.Put("customers", store.Key{"c9"}, store.Attrs{"city": struct{}{}}, 0, 10)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			failing, twin := atomicOpen(t, vfs.NewMem()), atomicOpen(t, vfs.NewMem())
			defer failing.Close()
			defer twin.Close()
			mustUpdate(t, failing, atomicBase)
			mustUpdate(t, twin, atomicBase)
			before := rawDump(t, failing)
			sameDump(t, "twins before", rawDump(t, twin), before)
			lastTx := failing.LastTx()

			recovered, err := updateRecovering(failing, c.fn)
			if err == nil && recovered == nil {
				t.Fatal("the transaction did not fail")
			}
			sameDump(t, "after the failed transaction", rawDump(t, failing), before)
			if failing.LastTx() != lastTx {
				t.Fatalf("last tx moved from %d to %d", lastTx, failing.LastTx())
			}
			testutil.Verify(t, failing)

			// The same successful transaction on both: same tx, same sks, same bytes.
			if cf, ct := mustUpdate(t, failing, atomicWrites), mustUpdate(t, twin, atomicWrites); cf != ct {
				t.Fatalf("commits differ: %+v vs %+v", cf, ct)
			}
			sameDump(t, "after the next transaction", rawDump(t, failing), rawDump(t, twin))
			testutil.Verify(t, failing)
		})
	}
}

// updateRecovering runs txn.Update and returns its error or the panic that
// escaped it.
func updateRecovering(db *store.DB, fn func(*txn.Tx) error) (recovered any, err error) {
	defer func() { recovered = recover() }()
	_, err = txn.Update(db, fn)
	return nil, err
}

// TestFailedOperationLeavesNoTrace commits a transaction in which some
// operations failed (invalid period, unstorable attribute, key of the wrong
// shape) and the function went on: only the successful operations are written,
// byte for byte as on a twin that never tried the failing ones.
func TestFailedOperationLeavesNoTrace(t *testing.T) {
	failing, twin := atomicOpen(t, vfs.NewMem()), atomicOpen(t, vfs.NewMem())
	defer failing.Close()
	defer twin.Close()
	mustUpdate(t, failing, atomicBase)
	mustUpdate(t, twin, atomicBase)
	mustUpdate(t, failing, func(tx *txn.Tx) error {
		if err := tx.Put("prices", store.Key{int64(7)}, store.Attrs{"amount": 2}, 50, 50); !errors.Is(err, store.ErrInvalidPeriod) {
			return fmt.Errorf("empty period: %v", err)
		}
		if _, err := tx.Upsert("customers", store.Key{"c0"}, store.Attrs{"city": []int{1}}, 20); !errors.Is(err, txn.ErrInvalidAttr) {
			return fmt.Errorf("unstorable attribute: %v", err)
		}
		if _, err := tx.Upsert("customers", store.Key{"c0"}, store.Attrs{"id": "x"}, 20); !errors.Is(err, txn.ErrInvalidAttr) {
			return fmt.Errorf("attribute named like the key: %v", err)
		}
		if err := tx.Delete("prices", store.Key{"seven"}, 0, 10); !errors.Is(err, store.ErrKeyShape) {
			return fmt.Errorf("wrong key shape: %v", err)
		}
		if _, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Oslo"}, store.Infinity); !errors.Is(err, store.ErrInvalidPeriod) {
			return fmt.Errorf("upsert at +inf: %v", err)
		}
		return atomicWrites(tx)
	})
	mustUpdate(t, twin, atomicWrites)
	sameDump(t, "after the transaction", txLogUnordered(rawDump(t, failing)), txLogUnordered(rawDump(t, twin)))
	testutil.Verify(t, failing)
}

// txLogUnordered drops the ordinals of transaction-log entries (keyspace 0x13,
// the key's last 4 bytes) and sorts the dump. Entries of one commit are ordered
// by the order in which the transaction first touched their keys, and a failed
// operation may touch a key (Upsert loads the key's timeline before it finds
// that its period is empty): that changes the order of the log, not its content.
func txLogUnordered(dump []string) []string {
	out := slices.Clone(dump)
	for i, line := range out {
		if key, value, ok := strings.Cut(line, " = "); ok && strings.HasPrefix(key, "13") {
			out[i] = key[:len(key)-8] + " = " + value
		}
	}
	slices.Sort(out)
	return out
}

// walFailure injects an error into one kind of write-ahead-log operation
// while armed.
func walFailure(kind errorfs.OpKind) *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == kind && strings.HasSuffix(op.Path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	})}
}

// TestInjectedWALError makes the write-ahead log fail during a commit, then
// reopens the store as a crash would leave it. Pebble treats a failed WAL write
// or sync as fatal (Logger.Fatalf, which store turns into a panic), so the commit
// fails by panicking and the DB must be reopened.
//
// A failed write never reaches the log: after reopening, the store holds exactly
// its bytes from before the transaction. A failed sync leaves the record in the
// log but maybe not on stable storage: reopened from what was synced, the store
// is as before; reopened from what the OS may still hold (all or some of the
// unsynced bytes), it holds either the bytes from before or those of a twin that
// committed the transaction, never a part of it.
func TestInjectedWALError(t *testing.T) {
	for _, c := range []struct {
		name string
		kind errorfs.OpKind
	}{{"write", errorfs.OpFileWrite}, {"sync", errorfs.OpFileSyncData}} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			inject := walFailure(c.kind)
			db := atomicOpen(t, errorfs.Wrap(mem, inject))
			mustUpdate(t, db, atomicBase)
			before := rawDump(t, db)

			twin := atomicOpen(t, vfs.NewMem())
			defer twin.Close()
			mustUpdate(t, twin, atomicBase)
			mustUpdate(t, twin, atomicWrites)
			after := rawDump(t, twin)

			inject.On()
			recovered, err := updateRecovering(db, atomicWrites)
			inject.Off()
			if recovered != nil || !errors.Is(err, store.ErrFailed) {
				t.Fatalf("failed commit: got error %v and panic %v, want an error wrapping store.ErrFailed", err, recovered)
			}
			if _, err := txn.Update(db, atomicWrites); !errors.Is(err, store.ErrFailed) {
				t.Fatalf("commit after a fatal engine error: %v, want store.ErrFailed", err)
			}
			_ = db.Close() // reports the injected error; the DB is unusable anyway

			synced := mem.CrashClone(vfs.CrashCloneCfg{})
			sameDump(t, "reopened from synced data", reopenDump(t, synced), before)
			rng := rand.New(rand.NewPCG(1, 2))
			for _, pct := range []int{100, 75, 50, 25} {
				clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
				got := reopenDump(t, clone)
				switch {
				case c.kind == errorfs.OpFileWrite || !equalDumps(got, after):
					sameDump(t, fmt.Sprintf("reopened with %d%% of unsynced data", pct), got, before)
				default:
					t.Logf("reopened with %d%% of unsynced data: the transaction whose sync failed is there, whole", pct)
				}
			}
		})
	}
}

// reopenDump opens the store on fsys, verifies it, and dumps it.
func reopenDump(t *testing.T, fsys vfs.FS) []string {
	t.Helper()
	db, err := storetest.Open("db", pebble.Options{FS: fsys}, store.Options{MustExist: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testutil.Verify(t, db)
	return rawDump(t, db)
}

func equalDumps(a, b []string) bool { return slices.Equal(a, b) }
