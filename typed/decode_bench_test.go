package typed

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

type benchAccount struct {
	ID      int64     `bitempo:"id,key"`
	Name    string    `bitempo:"name"`
	City    string    `bitempo:"city"`
	Tier    string    `bitempo:"tier"`
	Balance float64   `bitempo:"balance"`
	Orders  int64     `bitempo:"orders"`
	Active  bool      `bitempo:"active"`
	Opened  time.Time `bitempo:"opened"`
	Email   *string   `bitempo:"email"`
}

// BenchmarkDecodeRecord isolates what a typed read saves: decoding one stored
// attribute record into a struct through a map (DecodeAttrs, then picking the
// map apart by hand as a map API user does) or straight from its bytes.
func BenchmarkDecodeRecord(b *testing.B) {
	email := "c1@example.com"
	attrs := store.Attrs{"name": "Customer 1234", "city": "Bergen", "tier": "gold", "balance": 1851.5, "orders": int64(70),
		"active": true, "opened": time.Date(2020, 2, 21, 10, 0, 0, 0, time.UTC), "email": email}
	names := attrs.Names()
	ordinal := func(name string) (uint32, bool) {
		i := slices.Index(names, name)
		return uint32(i), i >= 0
	}
	nameOf := func(ord uint32) (string, bool) {
		if int(ord) >= len(names) {
			return "", false
		}
		return names[ord], true
	}
	rec, err := encoding.AppendRecordPositional(nil, &encoding.RecordValue{ValidTo: 1 << 40, TxFrom: 1, TxTo: 1 << 50, SK: 9, Attrs: attrs}, ordinal)
	if err != nil {
		b.Fatal(err)
	}
	pos, err := encoding.PositionalAttrs(rec)
	if err != nil {
		b.Fatal(err)
	}
	raw := store.NewRawAttrs(pos, nameOf)
	s, err := newSchema(reflect.TypeFor[benchAccount](), "accounts")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rv, err := encoding.DecodeRecordPositional(rec, 0, nameOf)
			if err != nil {
				b.Fatal(err)
			}
			m := rv.Attrs
			var a benchAccount
			a.Name, _ = m["name"].(string)
			a.City, _ = m["city"].(string)
			a.Tier, _ = m["tier"].(string)
			a.Balance, _ = m["balance"].(float64)
			a.Orders, _ = m["orders"].(int64)
			a.Active, _ = m["active"].(bool)
			a.Opened, _ = m["opened"].(time.Time)
			if e, ok := m["email"].(string); ok {
				a.Email = &e
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		d := decoder{s: s}
		for b.Loop() {
			var a benchAccount
			if err := d.decodeRaw(reflect.ValueOf(&a).Elem(), raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
