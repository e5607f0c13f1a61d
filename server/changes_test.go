package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// getLines requests an NDJSON answer and decodes its lines.
func getLines(t *testing.T, u string) (int, []map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %q: %v", u, sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return resp.StatusCode, lines
}

// TestChangesFeedResumesAtItsCursor reads a table's change feed through the
// JSON API a page at a time, each page resuming at the cursor of the last
// line before it, and requires the pages to make the whole feed; a poll at
// the last cursor sees only what was committed since.
func TestChangesFeedResumesAtItsCursor(t *testing.T) {
	srv, db := customers(t, Options{})
	base := srv.URL + "/v1/tables/customers/changes"
	code, all := getLines(t, base)
	if code != http.StatusOK || len(all) != 5 {
		t.Fatalf("the whole feed: %d %v", code, all)
	}
	if all[0]["op"] != "asserted" || all[0]["record"].(map[string]any)["attrs"].(map[string]any)["city"] != "Oslo" {
		t.Fatalf("first change: %v", all[0])
	}
	var paged []map[string]any
	cursor := ""
	for range len(all) + 1 {
		_, page := getLines(t, base+"?limit=3&cursor="+url.QueryEscape(cursor))
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		cursor = page[len(page)-1]["cursor"].(string)
	}
	a, _ := json.Marshal(all)
	p, _ := json.Marshal(paged)
	if string(a) != string(p) {
		t.Fatalf("pages:\n%s\nwant the whole feed:\n%s", p, a)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c3"}, store.Attrs{"city": "Lima"}, day("2024-04-01"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, next := getLines(t, base+"?cursor="+url.QueryEscape(cursor))
	if len(next) != 1 || next[0]["record"].(map[string]any)["key"].([]any)[0] != "c3" {
		t.Fatalf("the poll after the last cursor: %v", next)
	}
	for _, c := range []struct {
		query, code string
		status      int
	}{
		{"?cursor=nonsense", "ErrBadCursor", http.StatusBadRequest},
		{"?since=yesterday", "ErrBadRequest", http.StatusBadRequest},
		{"?limit=0", "ErrBadRequest", http.StatusBadRequest},
	} {
		status, body := getJSON(t, base+c.query, "")
		if status != c.status || body["code"] != c.code {
			t.Errorf("changes%s: %d %v, want %d %s", c.query, status, body, c.status, c.code)
		}
	}
	if status, body := getJSON(t, srv.URL+"/v1/tables/nosuch/changes", ""); status != http.StatusNotFound || body["code"] != "ErrUnknownTable" {
		t.Errorf("changes of an unknown table: %d %v", status, body)
	}
}
