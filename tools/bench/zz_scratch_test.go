package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func TestScratchLSM(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	sc, _ := scaleByName("medium")
	d := generate(sc, 1)
	for _, k := range engineKinds[:2] {
		dir := "/var/tmp/scratch/" + k.name
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		e, err := k.open(dir)
		if err != nil {
			t.Fatal(err)
		}
		e.createDim()
		st := time.Now()
		if err := e.ingest(d.inOrder, 1000); err != nil {
			t.Fatal(err)
		}
		fmt.Println(k.name, "ingest", time.Since(st))
		measure := func(label string, e engine) {
			e.startReads()
			pf, _ := os.Create("/var/tmp/scratch/" + k.name + "-" + label + ".prof")
			pprof.StartCPUProfile(pf)
			w := startWatch()
			for _, p := range d.lookups {
				e.lookup(p.key, p.valid)
			}
			s := w.stop()
			pprof.StopCPUProfile()
			pf.Close()
			fmt.Printf("%s %s lookup wall %v cpu %v per op\n", k.name, label, s.wall/time.Duration(len(d.lookups)), s.cpu/time.Duration(len(d.lookups)))
			e.stageFacts(d.facts)
			out := make([]answer, len(d.facts))
			w = startWatch()
			e.resolve(out)
			s = w.stop()
			fmt.Printf("%s %s resolve wall %v cpu %v\n", k.name, label, s.wall, s.cpu)
			w = startWatch()
			e.snapshot(d.snapAt, func(string, version) {})
			s = w.stop()
			fmt.Printf("%s %s snapshot wall %v cpu %v\n", k.name, label, s.wall, s.cpu)
		}
		measure("fresh", e)
		e.close()
		db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatFlushableIngestExcises, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(db.Metrics().String())
		if err := db.Compact(t.Context(), []byte{0}, []byte{0xff, 0xff}, true); err != nil {
			t.Fatal(err)
		}
		fmt.Println(db.Metrics().String())
		db.Close()
		e, _ = k.open(dir)
		measure("compacted", e)
		e.close()
	}
}
