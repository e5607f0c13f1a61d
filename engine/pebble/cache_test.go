package pebble_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/engine/pebble"
)

// TestCacheSharesMemtables checks what Options.CacheSize says: Pebble
// charges the memtables against the block cache (the one taking writes and a
// flushed one it keeps for reuse), so after reading much more table data than
// the cache holds, its blocks take at most CacheSize less twice MemTableSize
// (and the last blocks its shards added), and fill most of that.
func TestCacheSharesMemtables(t *testing.T) {
	const cacheSize, memSize = 8 << 20, 1 << 20
	e, err := pebble.Open("db", pebble.Options{InMemory: true, CacheSize: cacheSize, MemTableSize: memSize, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// 32 MiB of incompressible values, four times the cache, in commits of
	// 256 KiB, so several memtables are flushed.
	rng := rand.New(rand.NewPCG(1, 2))
	const entries, valueSize, perCommit = 32 << 10, 1 << 10, 256
	for lo := 0; lo < entries; lo += perCommit {
		ws := make([]engine.Write, 0, perCommit)
		for i := lo; i < lo+perCommit; i++ {
			v := make([]byte, valueSize)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			ws = append(ws, engine.Write{Key: fmt.Appendf(nil, "k%08d", i), Value: v})
		}
		if err := e.Commit(ws, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	v, err := e.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for range 2 {
		it, err := v.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != entries {
			t.Fatalf("read %d entries, wrote %d", n, entries)
		}
	}
	room := int64(cacheSize - 2*memSize)
	held := e.Metrics().BlockCache.Size
	t.Logf("the cache holds %d bytes of blocks; room for %d beside the memtables", held, room)
	// Each shard of the cache may pass its share by the block it adds last;
	// a cache charging no memtables would hold up to a third more.
	if slack := room / 32; held > room+slack {
		t.Errorf("the cache holds %d bytes of blocks, more than its size less two memtables (%d, and %d for the last blocks added): Pebble no longer charges them as Options.CacheSize says", held, room, slack)
	}
	if held < room/2 {
		t.Errorf("the cache holds %d bytes of blocks after reading 32 MiB, under half its room (%d)", held, room)
	}
}

// TestOpenWarnsWhenMemtablesCrowdTheCache checks that Open logs a warning
// exactly when the memtables' reservations leave less than a quarter of the
// block cache for table blocks.
func TestOpenWarnsWhenMemtablesCrowdTheCache(t *testing.T) {
	for _, c := range []struct {
		name     string
		cache    int64
		memtable uint64
		warn     bool
	}{
		{"defaults, half left", 0, 0, false},
		{"a quarter left", 32 << 20, 12 << 20, false},
		{"nothing left", 32 << 20, 0, true},
		{"a fifth left", 10 << 20, 4 << 20, true},
		{"memtables larger than the cache", 8 << 20, 16 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			e, err := pebble.Open("db", pebble.Options{InMemory: true, CacheSize: c.cache, MemTableSize: c.memtable, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs.String(), "little room for table blocks"); got != c.warn {
				t.Errorf("warned %v, want %v; logs:\n%s", got, c.warn, logs.String())
			}
		})
	}
}
