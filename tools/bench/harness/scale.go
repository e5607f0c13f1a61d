package main

import "fmt"

// scale sizes every workload of one run.
type scale struct {
	name string
	// keys x versions is the SCD2 feed of workloads 1 and 2 and the base table
	// of workloads 3, 5 and 6; the CDC feed of workload 7 has as many events
	// (plus duplicates).
	keys, versions int
	// lookups is the number of point lookups of workloads 3 and 4; slowLookups
	// the prefix of them that engines without point indexes (DuckDB) run, and
	// that every engine's checksum covers.
	lookups, slowLookups int
	// oldKeys x versions versions with corrections rounds each: workload 4.
	oldKeys, corrections int
	// facts is the batch size of workload 5.
	facts int
	// aggUsers users with ten contracts of versions versions each, and aggRows
	// rows to backfill features for: workload 8.
	aggUsers, aggRows int
	// batch is the number of changes or events per commit.
	batch int
	// runs is how many times each read measurement is repeated, writeRuns each
	// write workload (1, 2, 7: a fresh database per run); the median counts.
	runs, writeRuns int
}

var scales = []scale{
	{name: "small", keys: 1_000, versions: 10, lookups: 10_000, slowLookups: 500,
		oldKeys: 30, corrections: 100, facts: 10_000, aggUsers: 50, aggRows: 1_000, batch: 1_000, runs: 3, writeRuns: 3},
	{name: "medium", keys: 100_000, versions: 10, lookups: 100_000, slowLookups: 1_000,
		oldKeys: 10_000, corrections: 100, facts: 1_000_000, aggUsers: 5_000, aggRows: 100_000, batch: 1_000, runs: 3, writeRuns: 1},
	{name: "large", keys: 1_000_000, versions: 10, lookups: 100_000, slowLookups: 1_000,
		oldKeys: 100_000, corrections: 100, facts: 10_000_000, aggUsers: 50_000, aggRows: 1_000_000, batch: 1_000, runs: 1, writeRuns: 1},
}

func scaleByName(name string) (scale, error) {
	for _, s := range scales {
		if s.name == name {
			return s, nil
		}
	}
	return scale{}, fmt.Errorf("unknown scale %q (want small, medium or large)", name)
}
