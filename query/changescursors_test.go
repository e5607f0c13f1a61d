package query_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/query"
)

// renderChangesPage renders a page of changes, each with its cursor, and
// the page's cursor.
func renderChangesPage(page query.Page[query.Change]) string {
	var b strings.Builder
	for _, c := range page.Rows {
		fmt.Fprintf(&b, "%d %v %v valid [%d, %d) tx [%d, %d) %v %q\n", c.Tx, c.Op, c.Version.Key,
			c.Version.ValidFrom, c.Version.ValidTo, c.Version.TxFrom, c.Version.TxTo, c.Version.Attrs, c.Cursor())
	}
	fmt.Fprintf(&b, "next %q\n", page.Next)
	return b.String()
}

// TestSavedChangeCursorsKeepResuming pages the change feed of
// cursorsStore two changes a page and checks each change's cursor and each
// page's byte for byte against the cursors the same feed has always
// returned, then resumes Changes and ChangesRows from the saved cursors: a
// cursor a client kept must resume the same feed, however the reads that
// make cursors are arranged.
func TestSavedChangeCursorsKeepResuming(t *testing.T) {
	db, _ := cursorsStore(t)
	pages := []string{
		"1010 asserted 1 valid [10, 9223372036854775807) tx [1010, 1020) map[v:1] \"AWMAAAABgAAAAAAAA_IAAAAA\"\n" +
			"1010 asserted 2 valid [20, 9223372036854775807) tx [1010, 1030) map[v:2] \"AWMAAAABgAAAAAAAA_IAAAAB\"\n" +
			"next \"AWMAAAABgAAAAAAAA_IAAAAB\"\n",
		"1020 retired 1 valid [10, 9223372036854775807) tx [1010, 1020) map[v:1] \"AWMAAAABgAAAAAAAA_wAAAAA\"\n" +
			"1020 asserted 1 valid [10, 30) tx [1020, 9223372036854775807) map[v:1] \"AWMAAAABgAAAAAAAA_wAAAAB\"\n" +
			"next \"AWMAAAABgAAAAAAAA_wAAAAB\"\n",
		"1020 asserted 1 valid [30, 9223372036854775807) tx [1020, 9223372036854775807) map[v:3] \"AWMAAAABgAAAAAAAA_wAAAAC\"\n" +
			"1030 retired 2 valid [20, 9223372036854775807) tx [1010, 1030) map[v:2] \"AWMAAAABgAAAAAAABAYAAAAA\"\n" +
			"next \"AWMAAAABgAAAAAAABAYAAAAA\"\n",
		"1030 asserted 2 valid [5, 9223372036854775807) tx [1030, 9223372036854775807) map[v:4] \"AWMAAAABgAAAAAAABAYAAAAB\"\n" +
			"next \"\"\n",
	}
	cur := ""
	for i, want := range pages {
		page, err := query.ChangesPage(db, "d", 0, query.Latest, 2, cur, query.ChangesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := renderChangesPage(page); got != want {
			t.Fatalf("page %d:\n%s\nwant\n%s", i, got, want)
		}
		// The rest of the feed after the saved cursor, read whole.
		var rest []query.Change
		for c, err := range query.Changes(db, "d", 0, query.Latest, cur, query.ChangesOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, c)
		}
		if got := renderChangesPage(query.Page[query.Change]{Rows: rest[:len(page.Rows)], Next: page.Next}); got != want {
			t.Fatalf("Changes after %q:\n%s\nwant\n%s", cur, got, want)
		}
		var cursors []string
		if err := query.ChangesRows(db, "d", 0, query.Latest, cur, query.ChangesOptions{}, func(c *query.ChangeRow) bool {
			cursors = append(cursors, c.Cursor())
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if len(cursors) != len(rest) || cursors[0] != rest[0].Cursor() {
			t.Fatalf("ChangesRows after %q: cursors %q, Changes' first %q of %d", cur, cursors, rest[0].Cursor(), len(rest))
		}
		cur = page.Next
	}
}
