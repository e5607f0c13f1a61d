package store_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestGroupScanMatchesGroupRecords checks that a GroupScan, reading group
// after group through one iterator, hands over exactly the entries that
// GroupRecords yields for each group and transaction range, with the same
// record fields and attributes (stored and decoded), whether the groups come
// in index order (the iterator not sought again), repeated, in random order,
// unknown, at the latest transaction time or in the past, through the table
// and through projections of it; and that GroupMeeting hands over exactly
// those whose valid period meets its span.
func TestGroupScanMatchesGroupRecords(t *testing.T) {
	for seed := range 3 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 26))
			db := openGrouped(t)
			users := []any{"u0", "u1", "u2", "u10", int64(-4), int64(7), "u3"}
			for c := range 24 {
				update(t, db, func(tx *txn.Tx) error { return randomGroupWrites(tx, rng, users, c) })
			}
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tb, err := s.Table("contracts")
			if err != nil {
				t.Fatal(err)
			}
			var groups [][]byte
			for _, u := range append(users, "nobody", int64(1000)) {
				g, err := tb.AppendGroupKey(nil, store.Key{u})
				if err != nil {
					t.Fatal(err)
				}
				groups = append(groups, g)
			}
			slices.SortFunc(groups, bytes.Compare)
			views := map[string]*store.Table{"table": tb, "amount,status": s.Project(tb, []string{"amount", "status"}),
				"late": s.Project(tb, []string{"late"}), "none": s.Project(tb, []string{})}
			for name, view := range views {
				scan := s.GroupScan(view)
				for round := range 30 {
					minTx, maxTx := randomTxRange(rng, s.LastTx())
					order := slices.Clone(groups) // index order: no seek between groups
					switch round % 3 {
					case 1:
						rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
					case 2:
						order = slices.Repeat(order[rng.IntN(len(order)):][:1], 2) // one group twice in a row
					}
					from, to := store.NegInfinity, store.Infinity // Group
					if round%2 == 1 {                             // GroupMeeting a span
						from = rng.Int64N(50) - 5
						to = from + rng.Int64N(12)
					}
					for _, g := range order {
						want := groupRecordsDump(t, s, view, g, minTx, maxTx, from, to)
						got := groupScanDump(t, scan, g, minTx, maxTx, from, to)
						if got != want {
							t.Fatalf("%s: group %x at tx [%d, %d], valid [%d, %d]: GroupScan gives\n%s\nGroupRecords\n%s", name, g, minTx, maxTx, from, to, got, want)
						}
					}
				}
				if err := scan.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// randomGroupWrites puts and deletes random periods of a few contracts, which
// move between groups and retire records (some sharing their successors'
// attributes); commit c of 24 starts writing attribute "late".
func randomGroupWrites(tx *txn.Tx, rng *rand.Rand, users []any, c int) error {
	statuses := []string{"active", "closed", "pending"}
	for range 1 + rng.IntN(6) {
		key := store.Key{fmt.Sprintf("k%d", rng.IntN(10))}
		from := rng.Int64N(40)
		to := from + 1 + rng.Int64N(20)
		if rng.IntN(4) == 0 {
			to = store.Infinity
		}
		if rng.IntN(6) == 0 {
			if err := tx.Delete("contracts", key, from, to); err != nil {
				return err
			}
			continue
		}
		attrs := store.Attrs{"user_id": users[rng.IntN(len(users))], "amount": rng.Int64N(5)}
		if rng.IntN(3) > 0 {
			attrs["status"] = statuses[rng.IntN(len(statuses))]
		}
		if c >= 12 && rng.IntN(2) == 0 {
			d, err := encoding.ParseDecimal(fmt.Sprintf("%d.5", rng.IntN(9)))
			if err != nil {
				return err
			}
			attrs["late"] = d
		}
		if err := tx.Put("contracts", key, attrs, from, to); err != nil {
			return err
		}
	}
	return nil
}

// randomTxRange returns a transaction range of a group read: the latest time,
// one past time, or a span of past times.
func randomTxRange(rng *rand.Rand, last int64) (minTx, maxTx int64) {
	switch rng.IntN(3) {
	case 0:
		return last, last
	case 1:
		tx := 1 + rng.Int64N(last)
		return tx, tx
	}
	minTx = 1 + rng.Int64N(last)
	return minTx, minTx + rng.Int64N(last-minTx+1)
}

// groupRecordsDump renders what GroupRecords yields whose valid period meets
// [from, to], one entry per line.
func groupRecordsDump(t *testing.T, s *store.Snapshot, view *store.Table, group []byte, minTx, maxTx, from, to int64) string {
	t.Helper()
	var lines []string
	for rec, err := range s.GroupRecords(view, group, minTx, maxTx) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.ValidFrom > to || rec.ValidTo <= from {
			continue
		}
		raw, ok, err := rec.RawAttrs()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, groupEntryLine(t, rec, raw, ok))
	}
	return strings.Join(lines, "\n")
}

// groupScanDump renders what a GroupScan hands over (Group, or GroupMeeting
// [from, to] when that is not every valid time), one entry per line.
func groupScanDump(t *testing.T, scan *store.GroupScan, group []byte, minTx, maxTx, from, to int64) string {
	t.Helper()
	var lines []string
	read := scan.Group
	if from != store.NegInfinity || to != store.Infinity {
		read = func(group []byte, minTx, maxTx int64, fn func(*store.GroupEntry) error) error {
			return scan.GroupMeeting(group, minTx, maxTx, from, to, fn)
		}
	}
	err := read(group, minTx, maxTx, func(e *store.GroupEntry) error {
		raw, ok, err := e.RawAttrs()
		if err != nil {
			return err
		}
		lines = append(lines, groupEntryLine(t, &e.GroupRecord, raw, ok))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// groupEntryLine renders a record's fields, its stored attributes as a walk
// reports them (or "shared") and its decoded attributes.
func groupEntryLine(t *testing.T, rec *store.GroupRecord, raw store.RawAttrs, ok bool) string {
	t.Helper()
	walked := "shared"
	if ok {
		var parts []string
		if err := raw.Walk(func(name string, v *encoding.Value) error {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v.Any()))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		walked = strings.Join(parts, ",")
	}
	attrs, err := rec.Attrs()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x valid [%d, %d) tx [%d, %d) sk %d inferred %v value %x walk {%s} attrs %v",
		rec.Tuple, rec.ValidFrom, rec.ValidTo, rec.TxFrom, rec.TxTo, rec.SK, rec.Inferred, rec.Value, walked, attrs)
}
