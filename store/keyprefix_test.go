package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// TestAppendKeyStringPrefix checks that the last component of a string prefix
// is left open (no terminator), earlier and integer components are whole, and
// bad prefixes are refused as AppendKeyPrefix refuses them.
func TestAppendKeyStringPrefix(t *testing.T) {
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(TableDef{Name: "stock", Key: []KeyColumn{{Name: "region", Type: String}, {Name: "sku", Type: String}, {Name: "n", Type: Int64}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.AppendKeyStringPrefix(nil, Key{"eu", "sku-1"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := encoding.AppendKey(nil, []any{"eu"})
	want, _ = encoding.AppendComponentPrefix(want, "sku-1")
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	for _, k := range []Key{{"eu", "sku-1", int64(3)}, {"eu", "sku-10", int64(0)}} {
		enc, _ := tb.AppendKey(nil, k)
		if !bytes.HasPrefix(enc, got) {
			t.Errorf("%v is not under the prefix", k)
		}
	}
	for _, k := range []Key{{"eu-west", "sku-1", int64(3)}, {"eu", "sku-2", int64(0)}} {
		enc, _ := tb.AppendKey(nil, k)
		if bytes.HasPrefix(enc, got) {
			t.Errorf("%v is under the prefix", k)
		}
	}
	whole, _ := tb.AppendKeyPrefix(nil, Key{"eu", "sku-1", int64(3)})
	if got, _ := tb.AppendKeyStringPrefix(nil, Key{"eu", "sku-1", int64(3)}); !bytes.Equal(got, whole) {
		t.Fatalf("an int last component: got % x, want the whole encoding % x", got, whole)
	}
	if got, err := tb.AppendKeyStringPrefix(nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty prefix: % x, %v", got, err)
	}
	var ke *KeyError
	for _, bad := range []Key{{"eu", int64(1)}, {int64(1)}, {"eu", "x", int64(1), "y"}} {
		if _, err := tb.AppendKeyStringPrefix(nil, bad); !errors.As(err, &ke) {
			t.Errorf("%v: err %v, want a KeyError", bad, err)
		}
	}
}
