package store_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/sealed"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A group index entry's value leaves out the group attribute its key holds,
// for every type a group value can have, and every read of the index puts it
// back: GroupRecords' Attrs and RawAttrs, GroupScan's RawAttrs, through the
// whole table and through projections that keep or leave out the group
// attribute. Current and retired (history) entries both; Verify accepts the
// index after every write.
func TestGroupEntriesLeaveGroupValuesToKey(t *testing.T) {
	groups := []any{"u1", "", "with\x00zero", strings.Repeat("long", 80), []byte{0, 1, 2}, int64(7), int64(-300),
		int64(math.MinInt64), uint64(math.MaxUint64), int64(1 << 40)}
	db := openGrouped(t)
	for i, g := range groups {
		key := store.Key{"c" + string(rune('a'+i))}
		update(t, db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("contracts", key, store.Attrs{"user_id": g, "amount": int64(i)}, 10)
			return err
		})
		// A second version closes the first: two current entries and a
		// retired one that shares its attributes with the closed version.
		update(t, db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("contracts", key, store.Attrs{"user_id": g, "amount": int64(100 + i), "zz_note": "late"}, 20)
			return err
		})
	}
	s, tb := contractsSnapshot(t, db)
	names := db.AttrNames(tb)
	name := func(ord uint32) (string, bool) {
		if int(ord) < len(names) {
			return names[ord], true
		}
		return "", false
	}
	// The stored entries hold no user_id.
	entries := 0
	for kv, err := range s.RawScan(layout.TablePrefix(layout.Groups, tb.ID), layout.TablePrefix(layout.Groups, tb.ID+1)) {
		if err != nil {
			t.Fatal(err)
		}
		if encoding.SharesAttrs(kv.Value) {
			continue
		}
		entries++
		rv, err := encoding.DecodeRecordAt(kv.Value, 0, 1, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := rv.Attrs["user_id"]; ok || rv.Attrs["amount"] == nil {
			t.Fatalf("entry %x holds %v, want amount and no user_id", kv.Key, rv.Attrs)
		}
	}
	if entries != 2*len(groups) {
		t.Fatalf("%d group entries with attributes, want %d", entries, 2*len(groups))
	}
	for i, g := range groups {
		want, err := encoding.Canonical(g)
		if err != nil {
			t.Fatal(err)
		}
		group, err := tb.AppendGroupKey(nil, store.Key{g})
		if err != nil {
			t.Fatal(err)
		}
		for _, read := range []struct {
			name     string
			t        *store.Table
			walksKey bool
		}{
			{"table", tb, true},
			{"projection with the group attribute", s.Project(tb, []string{"amount", "user_id"}), true},
			{"projection without it", s.Project(tb, []string{"amount"}), false},
		} {
			var seen int
			check := func(rec *store.GroupRecord, raw store.RawAttrs, ok bool) {
				seen++
				attrs, err := rec.Attrs()
				if err != nil {
					t.Fatalf("group %v, %s: %v (value %x)", g, read.name, err, rec.Value)
				}
				if got, has := attrs["user_id"]; has != read.walksKey || (has && !(encoding.Attrs{"v": got}).Equal(encoding.Attrs{"v": want})) {
					t.Errorf("group %v, %s: Attrs %v, want user_id %v: %t", g, read.name, attrs, want, read.walksKey)
				}
				if !ok {
					return
				}
				walked := map[string]any{}
				if err := raw.Walk(func(n string, v *encoding.Value) error { walked[n] = v.Any(); return nil }); err != nil {
					t.Fatal(err)
				}
				if got, has := walked["user_id"]; has != read.walksKey || (has && !(encoding.Attrs{"v": got}).Equal(encoding.Attrs{"v": want})) {
					t.Errorf("group %v, %s: RawAttrs walk %v, want user_id %v: %t", g, read.name, walked, want, read.walksKey)
				}
				if walked["amount"] != attrs["amount"] {
					t.Errorf("group %v, %s: walked amount %v, decoded %v", g, read.name, walked["amount"], attrs["amount"])
				}
			}
			for rec, err := range s.GroupRecords(read.t, group, 0, s.LastTx()) {
				if err != nil {
					t.Fatal(err)
				}
				raw, ok, err := rec.RawAttrs()
				if err != nil {
					t.Fatal(err)
				}
				check(rec, raw, ok)
			}
			scan := s.GroupScan(read.t)
			err := scan.Group(group, 0, s.LastTx(), func(e *store.GroupEntry) error {
				raw, ok, err := e.RawAttrs()
				if err != nil {
					return err
				}
				check(&e.GroupRecord, raw, ok)
				return nil
			})
			if cerr := scan.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			// Each of GroupRecords and GroupScan: the two current records (the
			// first version closed at 20, the second) and the retired one,
			// which shares the first's attributes.
			if seen != 2*3 {
				t.Errorf("group %v (contract %d), %s: %d records read, want 6", g, i, read.name, seen)
			}
		}
	}
}

// contractsSnapshot returns a snapshot of db, closed when the test ends, and
// its contracts table.
func contractsSnapshot(t *testing.T, db *store.DB) (*store.Snapshot, *store.Table) {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tb, err := s.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	return s, tb
}

// An entry that holds its group attribute (the record's whole value, as an
// earlier layout stored it) is not the entry this layout derives: Verify
// reports it.
func TestVerifyGroupEntryHoldingGroupValue(t *testing.T) {
	db, s, tb := oneContract(t, 1)
	records, entries := rawKVs(t, s, []byte{0x10}, []byte{0x11}), groupEntryKVs(t, s, tb)
	if len(records) != 1 || len(entries) != 1 {
		t.Fatalf("%d current records and %d group entries, want one of each", len(records), len(entries))
	}
	record, entry := records[0], entries[0]
	if len(entry.Value) >= len(record.Value) || bytes.Equal(entry.Value, record.Value) {
		t.Fatalf("entry value %x is not shorter than its record's %x", entry.Value, record.Value)
	}
	if err := db.RawSet(sealed.Key{}, entry.Key, record.Value); err != nil {
		t.Fatal(err)
	}
	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.String(), "differs from its record") {
		t.Fatalf("verify did not report the entry:\n%s", rep)
	}
}

// A dump decodes a group index entry as it is stored: the group's values in
// the key's "group" field, the attributes without them.
func TestDecodeGroupEntry(t *testing.T) {
	db, s, tb := oneContract(t, 3)
	entries := groupEntryKVs(t, s, tb)
	for _, kv := range entries {
		e := db.DecodeEntry(kv)
		if e.Err != nil || e.Keyspace != "groups" {
			t.Fatalf("entry %x: keyspace %q, %v", kv.Key, e.Keyspace, e.Err)
		}
		fields := map[string]any{}
		for _, f := range append(e.KeyFields, e.Value...) {
			fields[f.Name] = f.Value
		}
		if g, ok := fields["group"].(store.Key); !ok || g.String() != (store.Key{"u1"}).String() {
			t.Errorf("group field %v, want [u1]", fields["group"])
		}
		attrs, ok := fields["attrs"].(store.Attrs)
		if !ok || attrs["amount"] != int64(3) || attrs["user_id"] != nil {
			t.Errorf("attrs field %v, want amount 3 and no user_id", fields["attrs"])
		}
	}
	if len(entries) != 1 {
		t.Fatalf("%d group entries, want 1", len(entries))
	}
}

// rawKVs returns the stored pairs of s in [start, end).
func rawKVs(t *testing.T, s *store.Snapshot, start, end []byte) []store.RawKV {
	t.Helper()
	var kvs []store.RawKV
	for kv, err := range s.RawScan(start, end) {
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, kv)
	}
	return kvs
}

// groupEntryKVs returns the group index entries of table tb as stored.
func groupEntryKVs(t *testing.T, s *store.Snapshot, tb *store.Table) []store.RawKV {
	t.Helper()
	return rawKVs(t, s, layout.TablePrefix(layout.Groups, tb.ID), layout.TablePrefix(layout.Groups, tb.ID+1))
}

// Putting a group's values back into its entries allocates nothing per
// entry: a scan of a group of 200 entries through the whole table (which
// walks the group attribute) allocates what one of 10 entries does.
func TestGroupScanPutsGroupValuesBackWithoutAllocating(t *testing.T) {
	if store.RaceEnabled {
		t.Skip("the race detector's checks allocate on every iterator move")
	}
	db := openGrouped(t)
	for _, n := range []int{10, 200} {
		user := fmt.Sprintf("u%d", n)
		update(t, db, func(tx *txn.Tx) error {
			for i := range n {
				key := store.Key{fmt.Sprintf("%s-c%03d", user, i)}
				if _, err := tx.Upsert("contracts", key, store.Attrs{"user_id": user, "amount": int64(i)}, 10); err != nil {
					return err
				}
			}
			return nil
		})
	}
	s, tb := contractsSnapshot(t, db)
	scan := s.GroupScan(tb)
	defer scan.Close()
	var v encoding.Value
	walked := 0
	walk := func(string, *encoding.Value) error { walked++; return nil }
	read := func(e *store.GroupEntry) error {
		raw, ok, err := e.RawAttrs()
		if err != nil || !ok {
			return err
		}
		return raw.WalkInto(&v, walk)
	}
	allocs := map[int]float64{}
	for _, n := range []int{10, 200} {
		group, err := tb.AppendGroupKey(nil, store.Key{fmt.Sprintf("u%d", n)})
		if err != nil {
			t.Fatal(err)
		}
		walked = 0
		if err := scan.Group(group, s.LastTx(), s.LastTx(), read); err != nil {
			t.Fatal(err)
		}
		if walked != 2*n {
			t.Fatalf("group of %d: %d attributes walked, want %d (user_id and amount of each)", n, walked, 2*n)
		}
		allocs[n] = testing.AllocsPerRun(20, func() { _ = scan.Group(group, s.LastTx(), s.LastTx(), read) })
	}
	if allocs[200] > allocs[10] {
		t.Fatalf("a group of 200 entries costs %v allocations, one of 10 %v: want no allocation per entry", allocs[200], allocs[10])
	}
}

// oneContract returns a grouped store holding contract c1 of user u1 with
// the given amount, a snapshot of it and its contracts table.
func oneContract(t *testing.T, amount int64) (*store.DB, *store.Snapshot, *store.Table) {
	t.Helper()
	db := openGrouped(t)
	update(t, db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": amount}, 0)
		return err
	})
	s, tb := contractsSnapshot(t, db)
	return db, s, tb
}
