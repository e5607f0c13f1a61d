package server

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutputFilesHaveLocalPermissions writes files through a server (export
// -o, resolve -o, history --svg, export --all) and requires the mode a local
// run gives them, 0644, not that of the unfinished temporary file.
func TestOutputFilesHaveLocalPermissions(t *testing.T) {
	srv, _ := customers(t, Options{})
	dir := t.TempDir()
	writeFile(t, dir, "orders.csv", "order_id,id,on\no1,c1,2024-03-12\n")
	for _, c := range []struct {
		args []string
		file string
	}{
		{[]string{"export", "customers", "-o", "c.parquet"}, "c.parquet"},
		{[]string{"export", "customers", "-o", "c.csv"}, "c.csv"},
		{[]string{"resolve", "customers", "--facts", "orders.csv", "--key", "id", "--at", "on", "-o", "r.csv"}, "r.csv"},
		{[]string{"history", "customers", "c1", "--svg", "c1.svg"}, "c1.svg"},
		{[]string{"export", "--all", "--history", "-o", "all"}, filepath.Join("all", "manifest.json")},
	} {
		if r := tool(t, dir, "", nil, append(c.args, "--db", srv.URL)...); r.Code != 0 {
			t.Fatalf("bitempo %v: exit %d %s", c.args, r.Code, r.Stderr)
		}
		st, err := os.Stat(filepath.Join(dir, c.file))
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("bitempo %v: %s has mode %v (%v), want 0644", c.args, c.file, st.Mode().Perm(), err)
		}
	}
}
