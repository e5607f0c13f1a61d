package main

import (
	"cmp"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleTuning is what the flags --block-size and --pebble-cache-mib set for
// the two engines on Pebble, bitempo and the floor, alike: the comparisons
// between them stay on equal terms while a run tries another setting.
type pebbleTuning struct {
	blockSize  int   // target size of the table files' data blocks; 0: Pebble's (4 KiB)
	cacheBytes int64 // block cache; 0: cacheBytes
}

// pebbleSetup is the run's pebbleTuning (run sets it from the flags).
var pebbleSetup pebbleTuning

// cache is the block cache of an engine on Pebble.
func (p pebbleTuning) cache() int64 { return cmp.Or(p.cacheBytes, cacheBytes) }

// maxBlockSize bounds --block-size: a block of a mebibyte is already far
// past where every read but a full scan slows down.
const maxBlockSize = 1 << 20

// apply sets the data block size of every level.
func (p pebbleTuning) apply(o *pebble.Options) {
	if p.blockSize == 0 {
		return
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = p.blockSize
	}
}

// memTableBytes is the memtable size of both engines on Pebble (bitempo's
// default, passed to both so that they cannot drift apart).
const memTableBytes = 16 << 20

// memtablesMiB is what the memtables of both engines on Pebble (the one taking
// writes and one kept for reuse) hold of the block cache.
const memtablesMiB = 2 * memTableBytes >> 20

// describe is the setting as the engines' descriptions give it.
func (p pebbleTuning) describe() string {
	s := fmt.Sprintf("%d MiB block cache, %d MiB of it reserved for the %d MiB memtables", p.cache()>>20, memtablesMiB, memTableBytes>>20)
	if p.blockSize != 0 {
		s += fmt.Sprintf(", %d-byte data blocks", p.blockSize)
	}
	return s
}
