package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The files the command lines of TestSameOutputThroughServer read.
var sameInputs = map[string]string{
	"changes.csv":   "id,city,tier,changed_on\nc1,Oslo,gold,2024-01-01\nc1,Bergen,gold,2024-03-11\nc2,Rome,silver,2024-02-01\nc3,Paris,gold,2024-01-15\n",
	"late.csv":      "id,city,tier,changed_on\nc1,Trondheim,gold,2024-02-01\n",
	"bad.csv":       "id,city,tier,changed_on\nc4,Lima,gold,2024-01-01\nc5,Quito,gold,not-a-date\n",
	"feed.csv":      "account,plan,ts,lsn,op\na1,basic,2024-01-01T00:00:00Z,1,u\na1,pro,2024-02-01T00:00:00Z,2,u\na2,basic,2024-01-05T00:00:00Z,3,u\na2,,2024-03-01T00:00:00Z,4,d\n",
	"contracts.csv": "contract_id,user_id,amount,valid_from,valid_to\nk1,u1,10,2024-01-01,2024-02-01\nk2,u1,5,2024-01-20,\nk3,u2,7,2024-01-03,2024-01-10\n",
	"orders.csv":    "order_id,customer_id,ordered_on\no1,c1,2024-03-08\no2,c1,2024-03-12\no3,c2,2024-02-10\no4,c9,2024-02-10\n",
	"training.csv":  "user_id,ts\nu1,2024-01-25\nu2,2024-01-05\nu3,2024-01-05\n",
}

// sameSteps are command lines (without --db) and their stdin, run in order on
// a local store and through a server, each one's output compared.
var sameSteps = []struct {
	stdin string
	args  []string
	files []string // output files to compare
}{
	{args: []string{"create", "customers", "--key", "id", "--axis", "date"}},
	{args: []string{"create", "subs", "--key", "account", "--kind", "changes"}},
	{args: []string{"create", "contracts", "--key", "contract_id", "--axis", "date", "--group-by", "user_id"}},
	{args: []string{"create", "prices", "--key", "sku", "--axis", "date", "--kind", "periods"}},
	{args: []string{"create", "customers", "--key", "id"}},
	{args: []string{"load", "customers", "changes.csv", "--at", "changed_on"}},
	{args: []string{"load", "customers", "bad.csv", "--at", "changed_on"}},
	{args: []string{"load", "customers", "missing.csv", "--at", "changed_on"}},
	{args: []string{"load", "customers", "-", "--at", "changed_on"}, stdin: "id,city,tier,changed_on\nc2,Milan,silver,2024-04-01\n"},
	{args: []string{"load", "customers", "late.csv", "--at=changed_on", "-q"}},
	{args: []string{"load", "subs", "feed.csv", "--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "d"}},
	{args: []string{"load", "subs", "feed.csv", "--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "d"}},
	{args: []string{"load", "contracts", "contracts.csv", "--from", "valid_from", "--to", "valid_to"}},
	{args: []string{"put", "prices", "sku-1", "--from", "2024-03-01", "--to", "2024-04-01", "--set", "price=9.5"}},
	{args: []string{"delete", "prices", "sku-1", "--from", "2024-03-15", "--to", "2024-03-20"}},
	{args: []string{"get", "customers", "c1", "--valid", "2024-03-08"}},
	{args: []string{"get", "customers", "c1", "--valid", "2024-03-12", "--format", "json", "--with-tx"}},
	{args: []string{"get", "customers", "c9", "--valid", "2024-03-12"}},
	{args: []string{"get", "customers", "c1", "--valid", "2023-03-12"}},
	{args: []string{"get", "nosuch", "c1"}},
	{args: []string{"get", "customers"}},
	{args: []string{"get", "customers", "c1", "--valid", "yesterday-ish"}},
	{args: []string{"get", "customers", "c1", "--no-such-flag"}},
	{args: []string{"frobnicate"}},
	{args: []string{"scan", "customers", "--valid", "2024-03-12"}},
	{args: []string{"scan", "customers", "--valid", "2024-03-12", "--format", "json", "--attrs", "city"}},
	{args: []string{"history", "customers", "c1", "--with-tx"}},
	{args: []string{"history", "customers", "c1", "--timeline"}},
	{args: []string{"history", "customers", "c1", "--svg", "c1.svg"}, files: []string{"c1.svg"}},
	{args: []string{"audit", "customers", "--prefix", "c"}},
	{args: []string{"changes", "customers", "--since", "0"}},
	{args: []string{"resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on", "--miss", "null"}},
	{args: []string{"resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on", "--miss", "null", "-o", "resolved.csv"}, files: []string{"resolved.csv"}},
	{args: []string{"resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on"}},
	{args: []string{"backfill", "contracts", "--left", "training.csv", "--group-by", "user_id", "--ts", "ts", "--agg", "sum(amount):7d,30d", "--agg", "count"}},
	{args: []string{"export", "customers", "-o", "customers.csv"}, files: []string{"customers.csv"}},
	{args: []string{"export", "customers", "--history", "--format", "json"}},
	{args: []string{"export", "--all", "--history", "-o", "dump"}, files: []string{"dump/manifest.json"}},
	{args: []string{"export", "--all", "--history", "-o", "dump"}},
	{args: []string{"export", "customers", "-o", "no/such/dir/out.csv"}},
	{args: []string{"import", "dump"}},
	{args: []string{"tables"}},
	{args: []string{"describe", "customers"}},
	{args: []string{"verify"}},
	{args: []string{"stats"}},
	{args: []string{"create", "scratch", "--key", "k"}},
	{args: []string{"drop", "scratch"}},
	{args: []string{"drop", "scratch", "--yes"}},
	{args: []string{"erase", "customers", "c3", "--reason", "asked"}},
	{args: []string{"erase", "customers", "c3", "--check"}},
	{args: []string{"vacuum"}},
	{args: []string{"get", "--help"}},
}

// TestSameOutputThroughServer runs the tool's commands on a local store and
// through a server, and requires the same stdout, stderr, exit status and
// output files of each, byte for byte once transaction times (which the two
// stores' clocks set apart) are numbered in order of appearance.
func TestSameOutputThroughServer(t *testing.T) {
	local, remote, served := t.TempDir(), t.TempDir(), t.TempDir()
	for _, dir := range []string{local, remote} {
		for name, content := range sameInputs {
			writeFile(t, dir, name, content)
		}
	}
	// The server runs in served, where its --db is s.db, as the local tool's is.
	t.Chdir(served)
	srv, _ := serveStore(t, "s.db", Options{Name: "s.db"})
	normLocal, normRemote := newNormalizer(), newNormalizer()
	for i, st := range sameSteps {
		l := tool(t, local, st.stdin, nil, append(st.args, "--db", "s.db")...)
		r := tool(t, remote, st.stdin, nil, append(st.args, "--db", srv.URL)...)
		what := fmt.Sprintf("step %d: bitempo %s", i, strings.Join(st.args, " "))
		lo := normLocal.run(l.Stdout, l.Stderr, l.Code, readFiles(t, local, st.files))
		ro := normRemote.run(r.Stdout, r.Stderr, r.Code, readFiles(t, remote, st.files))
		if lo != ro {
			t.Errorf("%s differs\n--- local:\n%s\n--- through the server:\n%s", what, lo, ro)
		}
	}
}

func readFiles(t *testing.T, dir string, names []string) []string {
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			out = append(out, "missing "+n)
			continue
		}
		out = append(out, n+":\n"+string(b))
	}
	sort.Strings(out)
	return out
}

// normalizer numbers transaction times (RFC 3339 instants of today's
// clock, and the microsecond counts dump prints) in order of appearance, and
// blanks durations.
type normalizer struct {
	seen map[string]string
}

func newNormalizer() *normalizer { return &normalizer{seen: map[string]string{}} }

var (
	instantRE  = regexp.MustCompile(`20[2-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9](\.[0-9]+)?Z|1[7-9][0-9]{14}`)
	durationRE = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s)\b`)
	tempRE     = regexp.MustCompile(`\.tmp-[0-9]+`)
	sizeRE     = regexp.MustCompile(`[0-9]+ bytes \([0-9.]+ [KMG]?i?B\)|[0-9.]+ [KMG]iB|[0-9]+ files`)
)

func (n *normalizer) text(s string) string {
	s = instantRE.ReplaceAllStringFunc(s, func(m string) string {
		if m[:4] == "2024" || m[:4] == "2023" {
			return m // the data's own times
		}
		if _, ok := n.seen[m]; !ok {
			n.seen[m] = fmt.Sprintf("TX%d", len(n.seen)+1)
		}
		return n.seen[m]
	})
	s = durationRE.ReplaceAllString(s, "DURATION")
	s = tempRE.ReplaceAllString(s, ".tmp-N")
	return sizeRE.ReplaceAllString(s, "SIZE")
}

func (n *normalizer) run(stdout, stderr string, code int, files []string) string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s\nfiles:\n%s", code, n.text(stdout), n.text(stderr), n.text(strings.Join(files, "\n")))
}
