package query_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

var (
	decAggOnce sync.Once
	decAggDB   *store.DB
	decAggErr  error
)

// decAggStore returns the store of BenchmarkAggregateDecimal, built once:
// BenchmarkAggregateIntPath's shape (20k contracts x 5 versions in 2k groups),
// each version holding the same number three times, as an int64 "amount"
// (cents), as a decimal(8,2) "price", and as "mixed", a decimal at scale 2 or
// 3, so every type is read from the same records.
func decAggStore(b *testing.B) *store.DB {
	benchOnly(b)
	decAggOnce.Do(func() {
		db := benchStore(b)
		// MixedTypes: "mixed" keeps its two scales (an undeclared attribute
		// would otherwise hold every value at the scale its first established).
		if _, decAggErr = db.CreateTable(store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"user_id"}, MixedTypes: true}); decAggErr != nil {
			return
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for lo := 0; lo < intAggContracts && decAggErr == nil; lo += 2_000 {
			_, decAggErr = txn.Update(db, func(tx *txn.Tx) error {
				for c := lo; c < lo+2_000; c++ {
					user := fmt.Sprintf("u%d", c%intAggGroups)
					for v := range intAggVersions {
						from := int64(v) * 10 * aggDay
						cents := rng.Int64N(1_000_000)
						price, err := encoding.NewDecimal(cents, 2)
						if err != nil {
							return err
						}
						mixed := price // every other version at scale 3: the general decimal path
						if v%2 == 1 {
							mixed, _ = price.Rescale(3)
						}
						attrs := store.Attrs{"user_id": user, "amount": cents, "price": price, "mixed": mixed}
						if err := tx.Put("contracts", store.Key{fmt.Sprintf("c%d", c)}, attrs, from, from+10*aggDay); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		if decAggErr == nil {
			decAggErr = db.Compact(context.Background())
		}
		decAggDB = db
	})
	if decAggErr != nil {
		b.Fatal(decAggErr)
	}
	return decAggDB
}

// BenchmarkAggregateDecimal runs SUM, AVG, MIN and MAX over the int64 column
// (type=int64: the integer path, the floor), over the decimal column of one
// scale (type=decimal: the integer path over coefficients) and over the one of
// two scales (type=decimal-mixed: the decimal path) of the same records, in
// the same run: Aggregate of one group,
// AggregateTable (a scan of 20k versions), a table-wide backfill of 1,000
// dates and a backfill of 200k rows over groups. The decimal runs report
// x-int64, their CPU time per operation over the int64 run's just before.
func BenchmarkAggregateDecimal(b *testing.B) {
	db := decAggStore(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	specs := func(col string) []query.Agg {
		var aggs []query.Agg
		for _, op := range []string{"sum", "avg", "min", "max"} {
			for _, w := range []string{"", ":30d"} {
				a, err := query.ParseAgg(op + "(" + col + ")" + w)
				if err != nil {
					b.Fatal(err)
				}
				aggs = append(aggs, a)
			}
		}
		return aggs
	}
	rng := rand.New(rand.NewPCG(9, 10))
	series := make([]query.LeftRow, 1_000)
	for i := range series {
		series[i] = query.LeftRow{TS: rng.Int64N(50 * aggDay)}
	}
	rows := make([]query.LeftRow, intAggRows)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprintf("u%d", rng.IntN(intAggGroups))}, TS: rng.Int64N(60 * aggDay)}
	}
	backfill := func(aggs []query.Agg, in []query.LeftRow, wide bool) error {
		for _, err := range query.Backfill(s, "contracts", in, aggs, query.BackfillOptions{TableWide: wide}) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	reads := []struct {
		name string
		run  func(aggs []query.Agg, i int) error
	}{
		{"aggregate", func(aggs []query.Agg, i int) error {
			_, err := query.Aggregate(s, "contracts", store.Key{fmt.Sprintf("u%d", i%intAggGroups)}, query.AsOf{Valid: int64(i%50) * aggDay}, aggs)
			return err
		}},
		{"aggregate-table", func(aggs []query.Agg, _ int) error {
			_, err := query.AggregateTable(s, "contracts", query.AsOf{Valid: 25 * aggDay}, aggs)
			return err
		}},
		{"backfill-table-wide", func(aggs []query.Agg, _ int) error { return backfill(aggs, series, true) }},
		{"backfill", func(aggs []query.Agg, _ int) error { return backfill(aggs, rows, false) }},
	}
	for _, read := range reads {
		var intNs float64
		for _, typ := range []struct{ name, col string }{{"int64", "amount"}, {"decimal", "price"}, {"decimal-mixed", "mixed"}} {
			aggs := specs(typ.col)
			b.Run("read="+read.name+"/type="+typ.name, func(b *testing.B) {
				defer enginetest.CPUPerOp(b)()
				cpu0, cpuOK := enginetest.ProcessCPU()
				i := 0
				for b.Loop() {
					i++
					if err := read.run(aggs, i); err != nil {
						b.Fatal(err)
					}
				}
				// The ratio is of CPU time where it is measured: on shared
				// cores wall time also counts waiting for one.
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if cpu1, ok := enginetest.ProcessCPU(); cpuOK && ok {
					ns = float64(cpu1-cpu0) / float64(b.N)
				}
				if typ.name == "int64" {
					intNs = ns
				} else if intNs > 0 {
					b.ReportMetric(ns/intNs, "x-int64")
				}
			})
		}
	}
}
