package query_test

import (
	"testing"

	"github.com/bitempo/bitempo/query"
)

func BenchmarkZZResolveOnly(b *testing.B) {
	env := benchSetup(b)
	facts := benchFactSet()
	s, _ := env.db.Snapshot()
	defer s.Close()
	for b.Loop() {
		if _, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZZRawOnly(b *testing.B) {
	env := benchSetup(b)
	facts := benchFactSet()
	for b.Loop() {
		rawResolve(b, env, facts)
	}
}

func BenchmarkZZGets(b *testing.B) {
	env := benchSetup(b)
	facts := benchFactSet()[:200000]
	s, _ := env.db.Snapshot()
	defer s.Close()
	for b.Loop() {
		perFactGets(b, s, facts)
	}
}
