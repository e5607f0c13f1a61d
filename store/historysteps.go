package store

import (
	"bytes"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file is how a read moves through one key's history, valid_from by
// valid_from, in descending order: the point read's walk (historyWalk, in
// snapshot.go) and the past-time merge's timelines (pastMerge.readHistory)
// both move this way. History's records of one valid_from are newest asserted
// first, and at most one of them is alive at any instant: the newest asserted
// at or before the read's time, unless it was retired by then. Each move
// steps nextsBeforeSeek records before it seeks, so a valid_from of one
// record, as every version an SCD2 change closed leaves, costs a step, and
// one corrected many times a seek.
//
// point says which iterator moves: a snapshot's, serving one key's point
// read, which seeks by prefix (its bloom filters skip tables without the
// key); else a merge's, bounded to the keys it reads, which seeks plainly and
// moves on to the next key when it leaves one.

// seekHistory positions it at the first key at or after key.
func seekHistory(it engine.Iter, point bool, key []byte) bool {
	if point {
		return it.SeekPrefixGE(key)
	}
	return it.SeekGE(key)
}

// toAssertedBy moves it, standing on a record of the valid_from whose
// records' keys start with group, to the newest of them asserted at or before
// tx. found reports that it stands on one, whose key holds keyTx; otherwise
// it stands past the valid_from's records, and ok is what its last
// positioning call returned. looked is how many records it looked at; buf
// holds the seek key.
func toAssertedBy(it engine.Iter, point bool, group []byte, tx int64, buf *[]byte) (keyTx int64, found, ok bool, looked int, err error) {
	for looked = 1; ; looked++ {
		k := it.Key()
		if len(k) != len(group)+layout.TimeLen {
			// A record key is its valid_from's prefix and a tx_from, whose
			// order the steps and seeks rely on.
			return 0, false, true, looked, fmt.Errorf("%w: history key %x is not a record key of the valid_from %x", ErrCorrupt, k, group)
		}
		if keyTx, err = layout.HistoryKeys.TxFrom(k); err != nil {
			return 0, false, true, looked, err
		}
		if keyTx <= tx {
			return keyTx, true, true, looked, nil
		}
		if looked <= nextsBeforeSeek {
			ok = it.Next()
		} else {
			*buf = layout.HistoryKeys.AppendValid(append((*buf)[:0], group...), tx)
			ok = seekHistory(it, point, *buf)
		}
		if !ok || !bytes.HasPrefix(it.Key(), group) {
			return 0, false, ok, looked, nil
		}
	}
}

// pastValidFrom moves it from a record of the valid_from from, whose records'
// keys start with group (keyPfx | desc(from)), to the first record after
// them, and returns what its last positioning call returned: a few steps,
// then a seek to the key's next valid_from. After the least valid time a
// point read is done with the key (false, the iterator unmoved) and a merge
// seeks past the key's records.
func pastValidFrom(it engine.Iter, point bool, keyPfx, group []byte, from int64, buf *[]byte) bool {
	for range nextsBeforeSeek {
		if ok := it.Next(); !ok || !bytes.HasPrefix(it.Key(), group) {
			return ok
		}
	}
	if from != NegInfinity {
		*buf = layout.HistoryKeys.AppendValid(append((*buf)[:0], keyPfx...), from-1)
		return seekHistory(it, point, *buf)
	}
	if point {
		return false
	}
	*buf = encoding.PrefixEndInPlace(append((*buf)[:0], keyPfx...))
	return len(*buf) > 0 && it.SeekGE(*buf)
}
