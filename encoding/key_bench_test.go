package encoding

import (
	"fmt"
	"testing"
)

// BenchmarkAppendComponent encodes one million distinct string and byte-string
// key components of the length a batch read's keys have (ten bytes, no byte
// to escape) into one reused buffer, as a batch resolve encodes its facts'
// keys; and strings with a byte to escape in the middle.
func BenchmarkAppendComponent(b *testing.B) {
	const n = 1_000_000
	plain := make([]string, n)
	escaped := make([]string, n)
	raw := make([][]byte, n)
	for i := range plain {
		plain[i] = fmt.Sprintf("key-%06d", i)
		escaped[i] = fmt.Sprintf("key\x00%06d", i)
		raw[i] = []byte(plain[i])
	}
	run := func(b *testing.B, keys []any) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, k := range keys {
				var err error
				if buf, err = AppendComponent(buf, k); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	}
	boxed := func(xs []string) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	b.Run("string", func(b *testing.B) { run(b, boxed(plain)) })
	b.Run("string-escaped", func(b *testing.B) { run(b, boxed(escaped)) })
	b.Run("bytes", func(b *testing.B) {
		keys := make([]any, n)
		for i, x := range raw {
			keys[i] = x
		}
		run(b, keys)
	})
}
