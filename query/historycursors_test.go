package query_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// cursorsStore writes a small history of tickingStore's table "d" in
// commits at transaction times 1010, 1020 and 1030: id 1 valid from 10,
// then from 30; id 2 valid from 20, then put from 5. It returns the store
// and the transaction time of each commit.
func cursorsStore(t *testing.T) (*store.DB, []int64) {
	t.Helper()
	db := tickingStore(t)
	var txs []int64
	for _, write := range []func(tx *txn.Tx) error{
		func(tx *txn.Tx) error {
			if _, err := tx.Upsert("d", store.Key{1}, store.Attrs{"v": int64(1)}, 10); err != nil {
				return err
			}
			_, err := tx.Upsert("d", store.Key{2}, store.Attrs{"v": int64(2)}, 20)
			return err
		},
		func(tx *txn.Tx) error {
			_, err := tx.Upsert("d", store.Key{1}, store.Attrs{"v": int64(3)}, 30)
			return err
		},
		func(tx *txn.Tx) error {
			return tx.Put("d", store.Key{2}, store.Attrs{"v": int64(4)}, 5, store.Infinity)
		},
	} {
		c, err := txn.Update(db, write)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, c.Tx)
	}
	return db, txs
}

// renderHistoryPage renders a page of versions and its cursor.
func renderHistoryPage(page query.Page[store.Version]) string {
	var b strings.Builder
	for _, v := range page.Rows {
		fmt.Fprintf(&b, "%v valid [%d, %d) tx [%d, %d) %v\n", v.Key, v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.Attrs)
	}
	fmt.Fprintf(&b, "next %q\n", page.Next)
	return b.String()
}

// TestSavedHistoryCursorsKeepResuming pages a clipped history one version a
// page, at the newest commit and at an older one, and checks each page's
// cursor byte for byte against the cursor the same page has always
// returned, then resumes from those saved cursors: a cursor a client kept
// must resume the same read, however the reads that make cursors are
// arranged. A cursor names the version's unclipped valid_from.
func TestSavedHistoryCursorsKeepResuming(t *testing.T) {
	db, txs := cursorsStore(t)
	for _, c := range []struct {
		tx    int64
		pages []string
	}{{query.Latest, []string{
		"1 valid [15, 30) tx [1020, 9223372036854775807) map[v:1]\nnext \"AWgAAAABgAAAAAAABAaAAAAAAAAACiCAAAAAAAAAAQ\"\n",
		"1 valid [30, 9223372036854775807) tx [1020, 9223372036854775807) map[v:3]\nnext \"AWgAAAABgAAAAAAABAaAAAAAAAAAHiCAAAAAAAAAAQ\"\n",
		"2 valid [15, 9223372036854775807) tx [1030, 9223372036854775807) map[v:4]\nnext \"\"\n",
	}}, {txs[1], []string{
		"1 valid [15, 30) tx [1020, 9223372036854775807) map[v:1]\nnext \"AWgAAAABgAAAAAAAA_yAAAAAAAAACiCAAAAAAAAAAQ\"\n",
		"1 valid [30, 9223372036854775807) tx [1020, 9223372036854775807) map[v:3]\nnext \"AWgAAAABgAAAAAAAA_yAAAAAAAAAHiCAAAAAAAAAAQ\"\n",
		"2 valid [20, 9223372036854775807) tx [1010, 1030) map[v:2]\nnext \"\"\n",
	}}} {
		opts := query.HistoryOptions{Tx: c.tx, Clip: true, Limit: 1}
		for i, want := range c.pages {
			page, err := query.HistoryPage(db, "d", query.KeyRange{}, 15, store.Infinity, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := renderHistoryPage(page); got != want {
				t.Fatalf("tx %d page %d:\n%s\nwant\n%s", c.tx, i, got, want)
			}
			next, err := query.HistoryRows(db, "d", query.KeyRange{}, 15, store.Infinity, opts, func(*store.Row) bool { return true })
			if err != nil || next != page.Next {
				t.Fatalf("tx %d page %d: HistoryRows next %q, error %v; HistoryPage next %q", c.tx, i, next, err, page.Next)
			}
			opts.Cursor = page.Next
		}
	}
}
