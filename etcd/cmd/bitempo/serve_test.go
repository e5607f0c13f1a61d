package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestServeOnEtcd: the etcd build's serve shares a store on the cluster.
// Commands sent to it with --db http://... write and read that store, a
// command run on the cluster directly prints the same, and SIGTERM stops the
// server with exit status 0.
func TestServeOnEtcd(t *testing.T) {
	dir := t.TempDir()
	db := "etcd://" + members.Hosts() + "/tool/serve"
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", db)
	cmd := exec.Command(binary, "serve", "--db", db, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	m := regexp.MustCompile(`at (http://\S+) `).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("serve's first line names no address: %q", sc.Text())
	}
	if err := os.WriteFile(filepath.Join(dir, "c.csv"), []byte(customersCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ok(t, dir, "load", "customers", "c.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", m[1]); !strings.Contains(r.stderr, "c.csv: 5 rows") {
		t.Fatalf("load through serve: %q", r.stderr)
	}
	shared := ok(t, dir, "get", "customers", "c1", "--valid", "2024-04-01", "--db", m[1])
	direct := ok(t, dir, "get", "customers", "c1", "--valid", "2024-04-01", "--db", db)
	if !strings.Contains(shared.stdout, "Bergen") || shared != direct {
		t.Fatalf("get through serve %+v, on the cluster %+v", shared, direct)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(rest.String(), "stopped") {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, rest.String())
	}
}
