package pebble

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func uv(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// TestMinUnflushedLog decodes hand-built version edits: the log number is
// found among fields of every kind Pebble writes, the last one wins, and an
// unknown tag, a truncated field or a length past the record claims nothing.
func TestMinUnflushedLog(t *testing.T) {
	var e []byte
	e = uv(e, veComparer)
	e = uv(e, 3)
	e = append(e, "abc"...)
	e = uv(uv(e, veNextFileNumber), 12)
	e = uv(uv(e, veLastSequence), 1000)
	// A new-file-4 entry: level, number, size, two keys, two sequence
	// numbers, a creation-time custom field, blob references, terminate.
	e = uv(uv(uv(uv(e, veNewFile4), 0), 5), 4096)
	e = append(uv(e, 2), "k1"...)
	e = append(uv(e, 2), "k2"...)
	e = uv(uv(e, 10), 20)
	e = append(uv(uv(e, 6), 1), 7)
	e = append(uv(uv(e, veCustomSynthPrefix), 1), 'p')
	e = uv(uv(uv(uv(uv(e, veCustomBlobRefs), 1), 1), 9), 100)
	e = uv(e, veCustomTerminate)
	// A new-file-5 entry with range keys only.
	e = uv(uv(uv(uv(e, veNewFile5), 6), 7), 10)
	e = append(e, 0)
	e = append(uv(e, 1), 'a')
	e = append(uv(e, 1), 'b')
	e = uv(uv(e, 1), 2)
	e = uv(e, veCustomTerminate)
	e = uv(uv(uv(e, veDeletedFile), 1), 3)
	e = uv(uv(e, veLogNumber), 8)
	e = uv(uv(uv(uv(uv(uv(e, veNewBlobFile), 1), 2), 3), 4), 5)
	e = uv(uv(e, veLogNumber), 9)
	if num, has, ok := minUnflushedLog(e); !ok || !has || num != 9 {
		t.Fatalf("got %d %v %v, want 9 true true", num, has, ok)
	}
	if _, has, ok := minUnflushedLog(uv(uv(nil, veNextFileNumber), 3)); !ok || has {
		t.Fatal("an edit without a log number")
	}
	for name, bad := range map[string][]byte{
		"unknown tag":        uv(uv(nil, 99), 1),
		"column family":      uv(uv(nil, 200), 1),
		"truncated":          e[:len(e)-1],
		"length past end":    uv(uv(nil, veComparer), 50),
		"level out of range": uv(uv(uv(nil, veDeletedFile), 7), 1),
		"unsafe custom tag":  append(e[:0:0], uv(uv(uv(uv(uv(uv(nil, veNewFile4), 0), 5), 1), 0), 0)...),
	} {
		if name == "unsafe custom tag" {
			bad = uv(uv(uv(uv(bad, 1), 2), 64|10), 0) // seqnums, then an unskippable field
		}
		if _, _, ok := minUnflushedLog(bad); ok {
			t.Errorf("%s: decoded", name)
		}
	}
	var m manifestLogs
	m.add(e)
	m.add(uv(uv(nil, 99), 1))
	m.add(uv(uv(nil, veLogNumber), 30))
	if !m.unknown || missingLog([]string{"OPTIONS-000100"}, &m) != "" {
		t.Fatal("an undecodable edit must make the check claim nothing")
	}
}

// TestMinUnflushedLogHostile feeds random and mutated bytes to the decoder:
// it returns, never panics, and allocates nothing proportional to a length it
// read.
func TestMinUnflushedLogHostile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(3) == 0 {
				b[i] = byte(r.IntN(10)) // small tags and lengths, more often
			}
		}
		minUnflushedLog(b)
	}
	huge := uv(uv(uv(uv(uv(uv(uv(uv(uv(uv(nil, veNewFile4), 0), 5), 1), 0), 0), 1), 2), veCustomBlobRefs), 1)
	huge = uv(huge, 1<<62)
	if _, _, ok := minUnflushedLog(huge); ok {
		t.Fatal("a blob reference count past the record decoded")
	}
}

// TestMissingLogClaim checks the rule that decides a live log is missing.
func TestMissingLogClaim(t *testing.T) {
	m := &manifestLogs{min: 4}
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{[]string{"OPTIONS-000008", "000007.log"}, false},                   // the live log is there
		{[]string{"OPTIONS-000008", "000002.log"}, true},                    // only an obsolete one
		{[]string{"OPTIONS-000008"}, true},                                  // none
		{[]string{"OPTIONS-000003"}, false},                                 // crash in Open before its log existed
		{[]string{"OPTIONS-000004"}, false},                                 // not above the minimum
		{[]string{"OPTIONS-000003", "OPTIONS-000008", "000004.log"}, false}, // the minimum itself
		{[]string{"OPTIONS-x", "000001.log"}, false},                        // no readable OPTIONS number
	} {
		if got := missingLog(c.names, m) != ""; got != c.want {
			t.Errorf("%v: missing %v, want %v", c.names, got, c.want)
		}
	}
}
