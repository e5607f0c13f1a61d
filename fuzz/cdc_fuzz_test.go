package fuzz

import (
	"errors"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// FuzzApplyCDC turns its input into a changes table definition and a set of CDC
// events, applies the events to two stores, one batch in input order and in a
// shuffled order split into batches with duplicated events and replayed batch
// ids, and checks after every batch that the table equals enginetest.Derived's
// from-scratch derivation of the events applied so far and that Verify is
// clean. Without a lateness horizon both stores must end byte-identical.
//
//	go test ./fuzz -run '^$' -fuzz '^FuzzApplyCDC$' -fuzztime 20s
func FuzzApplyCDC(f *testing.F) {
	f.Add([]byte{0x00, 3, 0x10, 0x05, 0x21, 0x0a, 0x32, 0x07, 0x00, 0x01, 0x02, 0x03})
	f.Add([]byte{0x0f, 6, 0x14, 0x81, 0x12, 0x23, 0x99, 0x45, 0x16, 0x37, 0x08, 0x52, 0x61, 0x70, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &cdcInput{b: data}
		def := cdcReadDef(in)
		events := cdcReadEvents(in)
		if len(events) == 0 {
			return
		}
		inOrder := cdcRunArrival(t, def, [][]txn.Event{events}, nil, -1)
		shuffled := slices.Clone(events)
		for i := len(shuffled) - 1; i > 0; i-- {
			j := int(in.byte()) % (i + 1)
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		}
		var batches [][]txn.Event
		var replays []int
		for rest := shuffled; len(rest) > 0; {
			n := 1 + int(in.byte())%len(rest)
			batch := slices.Clone(rest[:n])
			rest = rest[n:]
			if c := in.byte(); c&1 != 0 {
				batch = append(batch, events[int(c>>1)%len(events)])
			}
			batches = append(batches, batch)
			replays = append(replays, int(in.byte()))
		}
		split := cdcRunArrival(t, def, batches, replays, int(in.byte()))
		if def.Lateness == 0 && split != inOrder {
			t.Fatalf("arrival orders disagree:\nin order\n%s\nshuffled\n%s", inOrder, split)
		}
	})
}

// cdcInput reads fuzz input deterministically; past its end it reads zeros.
type cdcInput struct{ b []byte }

func (r *cdcInput) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// cdcReadDef reads one byte of table options.
func cdcReadDef(in *cdcInput) store.TableDef {
	c := in.byte()
	def := store.TableDef{Name: "t", Kind: store.Changes, Key: []store.KeyColumn{{Name: "k", Type: store.String}}}
	if c&1 != 0 {
		def.TrackExcept = []string{"y"}
	}
	if c&2 != 0 {
		def.Compare = map[string]store.CompareOptions{"y": {Trim: true, FoldCase: true}}
	}
	def.IgnoreNulls = c&4 != 0
	if c&8 != 0 {
		def.Granularity = 3
	}
	if c&0x30 == 0x30 {
		def.Lateness = 4
	}
	return def
}

// cdcReadEvents reads a count, then two bytes per event: key, op and seq in the
// first with the valid time, attribute values in the second.
func cdcReadEvents(in *cdcInput) []txn.Event {
	n := int(in.byte()) % 32
	events := make([]txn.Event, 0, n)
	for range n {
		a, b := in.byte(), in.byte()
		e := txn.Event{
			Key: store.Key{[]string{"a", "b"}[a>>7]},
			Seq: int64(a>>6) & 1,
			At:  int64(a&0x1f) - 8,
			Op:  txn.OpUpsert,
		}
		if a&0x20 != 0 && b&0x80 != 0 {
			e.Op = txn.OpDelete
		} else {
			e.Attrs = store.Attrs{}
			if x := b & 3; x < 3 {
				e.Attrs["x"] = []any{int64(1), int64(2), nil}[x]
			}
			if y := (b >> 2) & 3; y < 3 {
				e.Attrs["y"] = []string{"p", " P", "q"}[y]
			}
		}
		events = append(events, e)
	}
	return events
}

// cdcRunArrival applies the batches to a fresh store, replaying an earlier
// committed batch id before a batch when replays says so, and checks the table
// against the reference after every batch. It returns the final table.
//
// With erase >= 0, the key of event erase (modulo the events applied) is then
// erased: the table must equal the derivation of the other keys' events, the
// erased key must read as unknown and Verify must be clean. The state before
// the erasure is returned.
func cdcRunArrival(t *testing.T, def store.TableDef, batches [][]txn.Event, replays []int, erase int) string {
	db, err := store.Open("", store.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(def)
	if err != nil {
		t.Fatal(err)
	}
	applied := enginetest.ApplyBatches(t, db, tbl, batches, func(i, n int) int {
		if replays != nil && replays[i]&3 == 0 && n > 0 {
			return (replays[i] >> 2) % n
		}
		return -1
	}, func(err error) bool { return def.Lateness > 0 && errors.Is(err, txn.ErrTooLate) })
	stored := enginetest.StoredVersions(t, db, tbl)
	if erase >= 0 && len(applied) > 0 {
		cdcCheckErase(t, db, tbl, applied, applied[erase%len(applied)].Key)
	}
	return stored
}

// cdcCheckErase erases key and checks what remains against the reference.
func cdcCheckErase(t *testing.T, db *store.DB, tbl *store.Table, applied []txn.Event, key store.Key) {
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("t", key) }); err != nil {
		t.Fatalf("erase %v: %v", key, err)
	}
	rest := slices.DeleteFunc(slices.Clone(applied), func(e txn.Event) bool { return e.Key[0] == key[0] })
	if got, want := enginetest.StoredVersions(t, db, tbl), enginetest.Derived(tbl, rest); got != want {
		t.Fatalf("after erasing %v:\ngot\n%s\nwant\n%s", key, got, want)
	}
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after erasing %v: %v %v", key, err, rep)
	}
}
