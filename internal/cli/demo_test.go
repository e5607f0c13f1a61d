package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ok(t, dir, "demo")
	if _, err := os.Stat(filepath.Join(dir, "bitempo-demo.db")); err != nil {
		t.Fatalf("demo store: %v", err)
	}
	out := r.stdout
	// Each fact the demo claims, as the commands it runs print it (table format).
	for _, want := range []string{
		// the revert is three versions
		"c1           2024-01-01  2024-03-11  1   Ada   Oslo",
		"c1           2024-03-11  2024-06-01  4   Ada   Bergen",
		"c1           2024-06-01              6   Ada   Oslo",
		// as-of lookups: Oslo on 8 March, Bergen on 12 March, Cy in a gap
		"$ bitempo get customers c1 --valid 2024-03-08\ncustomer_id  valid_from  valid_to    sk  name  city\nc1           2024-01-01  2024-03-11  1   Ada   Oslo",
		"$ bitempo get customers c1 --valid 2024-03-12\ncustomer_id  valid_from  valid_to    sk  name  city\nc1           2024-03-11  2024-06-01  4   Ada   Bergen",
		"c3 at valid 2024-06-01, as of the latest commit: in a gap",
		// orders resolved
		"o1        c1           2024-03-08  120     1   Ada   Oslo",
		"o2        c1           2024-03-12  80      4   Ada   Bergen",
		"o3        c1           2024-06-15  45      6   Ada   Oslo",
		"o4        c2           2024-04-15  300     2   Bo    Trondheim",
		"resolved 6 facts against customers: 4 found, 2 without a version (left empty)",
		// the CDC feed: the late event lands between, the replay changes nothing
		"a1          2024-02-01T08:00:00Z  2024-03-01T09:00:00Z  4   plus",
		"1 batches already applied (nothing written)",
		// the correction, and the state as known before it
		"c2           2024-04-10            5   Bo    Stavanger",
		"c2           2024-01-15  2024-04-20  2   Bo    Trondheim",
		"retired",
		"+ sk 5",
		"bitempo-demo.db: 2 tables, 5 keys, 15 records: ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if strings.Contains(out, os.TempDir()+string(filepath.Separator)+"bitempo-demo-files") {
		t.Errorf("demo output shows its temporary directory")
	}
	// It recreates its store on a second run, and refuses a directory that is
	// not a store.
	ok(t, dir, "demo")
	write(t, dir, "precious.txt", "keep me")
	fails(t, dir, 1, "not a bitempo store", "demo", "--db", "precious.txt")
	os.Mkdir(filepath.Join(dir, "home"), 0o755)
	write(t, dir, "home/precious.txt", "keep me")
	fails(t, dir, 1, "not a bitempo store", "demo", "--db", "home")
	if _, err := os.Stat(filepath.Join(dir, "home/precious.txt")); err != nil {
		t.Fatalf("demo removed a user's file: %v", err)
	}
}
