package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// This file hands a command on an etcd:// store to the etcd build of the tool.
//
// The etcd engine lives in its own module (etcd/, with etcd/cmd/bitempo as its
// build of the tool) so that a program embedding bitempo on Pebble never has
// etcd, gRPC or Raft in its dependency graph; this build cannot link it. So that
// `--db etcd://...` still works for every command of this tool, as a user of
// `go run ./tools/bitempo` expects, a command whose --db is an etcd:// URL runs
// the etcd build instead, with the same arguments, standard streams, working
// directory and exit status, found in this order:
//
//  1. bitempo-etcd on the PATH (an installed etcd build);
//  2. in a source checkout of bitempo (the working directory or one of its
//     parents holds the module's go.mod and etcd/cmd/bitempo), the etcd build
//     compiled there with `go build` into the user's cache directory; Go's
//     build cache makes every run after the first quick, and a changed source
//     is rebuilt;
//  3. otherwise nothing is run, and the tool refuses the --db with an error
//     that says how to get the etcd build.
//
// Not a build tag, which would make the tool's behaviour depend on how it was
// compiled (docs/design/etcd-tool-delegation.md).

// etcdBinary is the name of an installed etcd build of the tool on the PATH.
const etcdBinary = "bitempo-etcd"

// delegate runs the etcd build of the tool when args name an etcd:// store and
// one can be found or built. It reports whether it ran one, and its status.
func delegate(args []string) (status int, ran bool) {
	if !strings.HasPrefix(dbFlag(args), "etcd://") {
		return 0, false
	}
	bin, err := exec.LookPath(etcdBinary)
	if err != nil {
		root, ok := checkout()
		if !ok {
			return 0, false
		}
		if bin, err = buildEtcdTool(root); err != nil {
			fmt.Fprintf(os.Stderr, "bitempo: --db is an etcd store, and building the etcd build of the tool in %s failed: %v\n", filepath.Join(root, "etcd"), err)
			return 1, true
		}
	}
	return run(bin, args), true
}

// dbFlag returns the value of the --db flag in args ("" when absent).
func dbFlag(args []string) string {
	db := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return db
		case a == "--db" && i+1 < len(args):
			db = args[i+1]
			i++
		case strings.HasPrefix(a, "--db="):
			db = strings.TrimPrefix(a, "--db=")
		}
	}
	return db
}

// checkout returns the root of the bitempo source checkout that holds the
// working directory, if any: the directory whose go.mod declares the module
// github.com/bitempo/bitempo and that holds the etcd build's source.
func checkout() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isCheckout(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isCheckout(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "etcd", "cmd", "bitempo", "main.go")); err != nil {
		return false
	}
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == "github.com/bitempo/bitempo"
		}
	}
	return false
}

// buildEtcdTool builds the etcd build of the tool from the checkout at root
// into the user's cache directory, one binary per checkout, and returns its path.
func buildEtcdTool(root string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	bin := filepath.Join(cache, "bitempo", "bitempo-etcd-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "bitempo: --db is an etcd store: building the etcd build of the tool from %s (once; later runs reuse it)\n", filepath.Join(root, "etcd"))
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/bitempo")
	build.Dir = filepath.Join(root, "etcd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", err
	}
	return bin, nil
}
