package query_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// renderChanges renders changes as checkChangesRows compares them: each
// change's position, operation and erasure, then its version from proj (read
// with the projection) with the attributes full (read without) gives the
// row's accessors.
func renderChanges(t *testing.T, proj, full []query.Change) string {
	t.Helper()
	var b strings.Builder
	for i, c := range proj {
		fmt.Fprintf(&b, "tx %d %v erasure %+v cursor %s\n", c.Tx, c.Op, c.Erasure, c.Cursor())
		if c.Op != query.Erased {
			v := c.Version
			b.WriteString(renderVersion(t, &v, full[i].Version.Attrs) + "\n  version " + renderVersion(t, &v, nil) + "\n")
		}
	}
	return b.String()
}

// changesText reads a change feed with ChangesRows and renders it as
// renderChanges does.
func changesText(t *testing.T, s *store.Snapshot, since, until int64, cur string, opts query.ChangesOptions) (string, int) {
	t.Helper()
	rr := newRowsReader(t)
	n := 0
	err := query.ChangesRows(s, "h", since, until, cur, opts, func(c *query.ChangeRow) bool {
		n++
		fmt.Fprintf(&rr.text, "tx %d %v erasure %+v cursor %s\n", c.Tx, c.Op, c.Erasure, c.Cursor())
		if (c.Row == nil) != (c.Op == query.Erased) {
			rr.err = fmt.Errorf("change %d: %v with row %v", n, c.Op, c.Row)
			return false
		}
		// Read as known at until: a later retirement is not there yet.
		if c.Row != nil && c.Row.TxTo != store.Infinity && (c.Row.TxTo > until && until != query.Latest || c.Row.TxTo > s.LastTx()) {
			rr.err = fmt.Errorf("change %d: tx_to %d after until %d", n, c.Row.TxTo, until)
			return false
		}
		return c.Row == nil || rr.read(c.Row)
	})
	if err != nil || rr.err != nil {
		t.Fatalf("ChangesRows(%d, %d, %q, %+v): error %v, row error %v", since, until, cur, opts, err, rr.err)
	}
	return rr.text.String(), n
}

// TestChangesRowsMatchChanges reads random windows of the change feed of
// random histories (corrections, deletes, SCD2 closes whose retired records
// share their successor's attributes, placeholders and erasures) with
// ChangesRows and checks every change against Changes, the map path: its
// transaction, operation, erasure and cursor, and its record field by field
// and attribute by attribute with its type (Walk projected as Changes
// projects, the accessors reading every attribute), and each row's Version
// against Changes' Version. Every change's cursor resumes both feeds at the
// same change.
func TestChangesRowsMatchChanges(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{5, rand.Uint64()}) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 19))
			db, _, txs := rowsStore(t, rng, 100, 80)
			for range 3 { // erase keys that have records
				var key store.Key
				for c, err := range query.Changes(db, "h", 0, query.Latest, "", query.ChangesOptions{}) {
					if err != nil {
						t.Fatal(err)
					}
					if c.Op == query.Asserted && (key == nil || rng.IntN(20) == 0) {
						key = c.Version.Key
					}
				}
				c, err := txn.Update(db, func(tx *txn.Tx) error { return tx.EraseFor("h", key, "test") })
				if err != nil {
					t.Fatal(err)
				}
				txs = append(txs, c.Tx)
			}
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			kinds := map[query.Op]int{}
			for range testlong.Size(40, 15) {
				since, until := int64(0), query.Latest
				if rng.IntN(2) == 0 {
					since = txs[rng.IntN(len(txs))] - rng.Int64N(2)
				}
				if rng.IntN(2) == 0 {
					until = txs[rng.IntN(len(txs))]
				}
				var opts query.ChangesOptions
				switch rng.IntN(3) {
				case 1:
					opts.Project = []string{"s"}
				case 2:
					opts.Project = []string{"d", "i", "zz", "t", "y"}
				}
				full := collectChanges(t, s, since, until, "", query.ChangesOptions{})
				proj := collectChanges(t, s, since, until, "", opts)
				for _, c := range proj {
					kinds[c.Op]++
				}
				got, n := changesText(t, s, since, until, "", opts)
				if want := renderChanges(t, proj, full); got != want || n != len(proj) {
					t.Fatalf("window (%d, %d] %+v: ChangesRows\n%s\nChanges\n%s", since, until, opts, got, want)
				}
				if len(proj) == 0 {
					continue
				}
				i := rng.IntN(len(proj))
				rest, _ := changesText(t, s, since, until, proj[i].Cursor(), opts)
				if want := renderChanges(t, proj[i+1:], full[i+1:]); rest != want {
					t.Fatalf("window (%d, %d] %+v after change %d: ChangesRows\n%s\nChanges\n%s", since, until, opts, i, rest, want)
				}
			}
			if kinds[query.Asserted] == 0 || kinds[query.Retired] == 0 || kinds[query.Erased] == 0 {
				t.Fatalf("changes read: %v; want every operation", kinds)
			}
		})
	}
}

// collectChanges reads a change feed with Changes.
func collectChanges(t *testing.T, s *store.Snapshot, since, until int64, cur string, opts query.ChangesOptions) []query.Change {
	t.Helper()
	var out []query.Change
	for c, err := range query.Changes(s, "h", since, until, cur, opts) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
