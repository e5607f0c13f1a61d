package encoding_test

import (
	"bytes"
	"fmt"
	"log"
	"time"

	"github.com/bitempo/bitempo/encoding"
)

// Encoded tuples sort as their components do, whatever their lengths, so a
// store can keep keys in order as plain bytes.
func ExampleAppendKey() {
	a, _ := encoding.AppendKey(nil, []any{"sku-1", int64(-5)})
	b, _ := encoding.AppendKey(nil, []any{"sku-1", int64(3)})
	c, _ := encoding.AppendKey(nil, []any{"sku-10", int64(-100)})
	fmt.Println(bytes.Compare(a, b), bytes.Compare(b, c))

	key, err := encoding.DecodeKey(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %d\n", key[0], key[1])
	// Output:
	// -1 -1
	// "sku-10" -100
}

// Newest-first times: AppendTimeDesc inverts the order, so the latest version
// of a key is the first one a forward scan meets.
func ExampleAppendTimeDesc() {
	older := encoding.AppendTimeDesc(nil, 100)
	newer := encoding.AppendTimeDesc(nil, 200)
	fmt.Println(bytes.Compare(newer, older))
	t, _, _ := encoding.DecodeTimeDesc(newer)
	fmt.Println(t)
	// Output:
	// -1
	// 200
}

// Attribute records encode deterministically: equal records are equal bytes,
// whatever the Go widths or time zones they were written with, and decode to
// the canonical types.
func ExampleAppendAttrs() {
	oslo := time.FixedZone("CET", 3600)
	a, _ := encoding.AppendAttrs(nil, encoding.Attrs{"qty": int32(3), "at": time.Date(2024, 3, 11, 10, 30, 0, 0, oslo)})
	b, _ := encoding.AppendAttrs(nil, encoding.Attrs{"at": time.Date(2024, 3, 11, 9, 30, 0, 0, time.UTC), "qty": int64(3)})
	fmt.Println(bytes.Equal(a, b))

	attrs, err := encoding.DecodeAttrs(a)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%T %v, %T %v\n", attrs["qty"], attrs["qty"], attrs["at"], attrs["at"].(time.Time).Format(time.RFC3339))
	// Output:
	// true
	// int64 3, time.Time 2024-03-11T09:30:00Z
}

// WalkAttrs reads a record in place, without building a map: what decoding
// into a struct needs.
func ExampleWalkAttrs() {
	rec, _ := encoding.AppendAttrs(nil, encoding.Attrs{"city": "Oslo", "visits": int64(12), "vip": nil})
	err := encoding.WalkAttrs(rec, func(name []byte, v *encoding.Value) error {
		switch v.Kind {
		case encoding.KindString:
			fmt.Printf("%s: string %s\n", name, v.Bytes)
		case encoding.KindInt:
			fmt.Printf("%s: int %d\n", name, v.Int)
		case encoding.KindNull:
			fmt.Printf("%s: null\n", name)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// city: string Oslo
	// vip: null
	// visits: int 12
}
