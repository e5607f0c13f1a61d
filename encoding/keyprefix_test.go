package encoding

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestAppendComponentPrefix(t *testing.T) {
	got, err := AppendComponentPrefix(nil, "sku-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{tagString}, "sku-1"...); !bytes.Equal(got, want) {
		t.Fatalf("string prefix: got % x, want % x", got, want)
	}
	got, _ = AppendComponentPrefix(nil, []byte{'a', 0, 'b'})
	if want := []byte{tagBytes, 'a', escape, escaped00, 'b'}; !bytes.Equal(got, want) {
		t.Fatalf("bytes prefix: got % x, want % x", got, want)
	}
	for _, c := range []any{int64(-3), uint64(7), 12} {
		whole, _ := AppendComponent(nil, c)
		got, err := AppendComponentPrefix(nil, c)
		if err != nil || !bytes.Equal(got, whole) {
			t.Fatalf("%T %v: got % x, %v; want the whole encoding % x", c, c, got, err, whole)
		}
	}
	if _, err := AppendComponentPrefix(nil, 1.5); err == nil {
		t.Fatal("float: no error")
	}
	for _, tc := range []struct {
		prefix, key string
		match       bool
	}{
		{"sku-1", "sku-1", true},
		{"sku-1", "sku-10", true},
		{"sku-1", "sku-1\x00", true},
		{"sku-1", "sku-2", false},
		{"sku-1", "sku-", false},
		{"", "anything", true},
		{"a\x00", "a", false},
		{"a\x00", "a\x00\x01", true},
		{"a\x01", "a", false},
	} {
		p, _ := AppendComponentPrefix(nil, tc.prefix)
		k, _ := AppendComponent(nil, tc.key)
		if got := bytes.HasPrefix(k, p); got != tc.match {
			t.Errorf("prefix %q, key %q: encoded match %v, want %v", tc.prefix, tc.key, got, tc.match)
		}
	}
}

// TestComponentPrefixMatchesFilter checks the encoded prefix against a
// brute-force filter: for random strings, the encoding of a key starts with the
// encoded prefix (and sorts inside its PrefixEnd bound) exactly when the raw
// string starts with the raw prefix; a composite key's earlier components match
// whole.
func TestComponentPrefixMatchesFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		lead, key := string(randomBytes(rng)), string(randomBytes(rng))
		p := string(randomBytes(rng))
		if rng.IntN(3) == 0 && len(key) > 0 {
			p = key[:rng.IntN(len(key)+1)] // a real prefix, often
		}
		plead := lead
		if rng.IntN(4) == 0 {
			plead = string(randomBytes(rng))
		}
		checkComponentPrefix(t, []any{plead}, p, []any{lead, key})
		checkComponentPrefix(t, nil, p, []any{key})
		checkComponentPrefix(t, nil, []byte(p), []any{[]byte(key)})
	}
}

func checkComponentPrefix(t *testing.T, lead []any, last any, key []any) {
	t.Helper()
	enc, err := AppendKey(nil, lead)
	if err != nil {
		t.Fatal(err)
	}
	if enc, err = AppendComponentPrefix(enc, last); err != nil {
		t.Fatal(err)
	}
	k, err := AppendKey(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	want := true
	for i, c := range lead {
		want = want && c.(string) == key[i].(string)
	}
	switch p := last.(type) {
	case string:
		want = want && strings.HasPrefix(key[len(lead)].(string), p)
	case []byte:
		want = want && bytes.HasPrefix(key[len(lead)].([]byte), p)
	}
	if got := bytes.HasPrefix(k, enc); got != want {
		t.Fatalf("lead %q, prefix %q, key %q: encoded match %v, filter %v", lead, last, key, got, want)
	}
	inSpan := bytes.Compare(k, enc) >= 0 && bytes.Compare(k, PrefixEnd(enc)) < 0
	if inSpan != want {
		t.Fatalf("lead %q, prefix %q, key %q: in [prefix, PrefixEnd) %v, filter %v", lead, last, key, inSpan, want)
	}
}

func FuzzComponentPrefix(f *testing.F) {
	f.Add("sku-1", "sku-10")
	f.Add("a\x00", "a\x00\x01")
	f.Add("a\x00", "a")
	f.Fuzz(func(t *testing.T, p, key string) {
		checkComponentPrefix(t, nil, p, []any{key})
		checkComponentPrefix(t, []any{"k"}, p, []any{"k", key})
	})
}
