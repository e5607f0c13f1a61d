package cli

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// vanishingFS lists every file of its MapFS but reports gone, on stat, the files
// named in gone: a Pebble file deleted between ReadDir and Info.
type vanishingFS struct {
	fstest.MapFS
	gone map[string]bool
}

func (v vanishingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := v.MapFS.ReadDir(name)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if v.gone[e.Name()] {
			entries[i] = vanishedEntry{e}
		}
	}
	return entries, nil
}

type vanishedEntry struct{ fs.DirEntry }

func (vanishedEntry) Info() (fs.FileInfo, error) { return nil, fs.ErrNotExist }

func TestTreeSizeSkipsFilesDeletedDuringTheWalk(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"MANIFEST-000001": {Data: make([]byte, 10)},
		"000010.sst":      {Data: make([]byte, 1000)},
		"000011.sst":      {Data: make([]byte, 100)},
	}
	size, n, err := treeSize(vanishingFS{files, map[string]bool{"000010.sst": true}})
	if err != nil {
		t.Fatalf("treeSize: %v", err)
	}
	if size != 110 || n != 2 {
		t.Fatalf("treeSize = %d bytes in %d files, want 110 in 2", size, n)
	}
}

func TestDirSizeOfMissingStoreIsAnError(t *testing.T) {
	t.Parallel()
	_, _, err := dirSize(t.TempDir() + "/absent")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dirSize of a missing directory: err = %v, want fs.ErrNotExist", err)
	}
}

func TestStatsKeyspaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "id", "--axis", "int", "--db", "db")
	write(t, dir, "c.csv", "id,at,city\nc1,1,Oslo\nc1,5,Bergen\n")
	ok(t, dir, "load", "customers", "c.csv", "--at", "at", "--batch-size", "1", "--db", "db")
	r := ok(t, dir, "stats", "--keyspaces", "--format", "csv", "--db", "db")
	for _, want := range []string{
		"keyspace,name,entries,key_bytes,value_bytes,bytes\n",
		"0x10,current,2,", // the closed version and the new one
		"0x11,history,1,", // the version as it was before the close
		"0x12,sk-index,2,",
		"0x13,txlog,2,", // one entry per transaction and key
		"0x22,checkpoints,0,0,0,0\n",
		"\nall,,",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats --keyspaces lacks %q:\n%s", want, r.stdout)
		}
	}
}
