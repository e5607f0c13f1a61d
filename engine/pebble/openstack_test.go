package pebble

import (
	"strings"
	"sync/atomic"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openSeeingFS records whether Pebble's Open was on the stack when it
// created its OPTIONS file.
type openSeeingFS struct {
	vfs.FS
	sawOpen atomic.Bool
}

func (f *openSeeingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.Contains(name, "OPTIONS") || strings.HasSuffix(name, ".dbtmp") {
		if inPebbleOpen() {
			f.sawOpen.Store(true)
		}
	}
	return f.FS.Create(name, category)
}

// TestInPebbleOpen checks that the fence recognises Pebble's Open on the
// stack (pebbleOpenName spelled as the runtime spells it), and only there.
func TestInPebbleOpen(t *testing.T) {
	if inPebbleOpen() {
		t.Fatal("inPebbleOpen outside Open")
	}
	fs := &openSeeingFS{FS: vfs.NewMem()}
	db, err := cpebble.Open("db", &cpebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !fs.sawOpen.Load() {
		t.Fatalf("Open wrote its OPTIONS file without %s on the stack", pebbleOpenName)
	}
}
