package query

import (
	"bytes"
	"iter"

	"github.com/bitempo/bitempo/store"
)

// Period is a valid-time interval [From, To).
type Period struct {
	From, To int64
}

// GapOptions tune Gaps.
type GapOptions struct {
	// Keys selects the keys to check; the zero value checks every key.
	Keys KeyRange
	// Tx is the transaction time the timelines are read at; Latest reads the
	// newest commit.
	Tx int64
	// CheckStart also reports keys whose first version starts after StartsAfter:
	// facts of those keys before that start cannot resolve (a history loaded from
	// too late a date, or facts older than the dimension).
	CheckStart  bool
	StartsAfter int64
}

// KeyGaps is one key the gap report flags.
type KeyGaps struct {
	Key store.Key
	// First is the valid_from of the key's first version, Last the valid_to of
	// its last.
	First, Last int64
	// Gaps are the holes between consecutive versions, in valid order.
	Gaps []Period
	// LateStart is set when GapOptions.CheckStart is and First is after
	// StartsAfter.
	LateStart bool
}

// Gaps reports, in key order, the keys whose timeline as known at opts.Tx has a
// gap between its first and last version, and (with CheckStart) the keys whose
// first version starts after opts.StartsAfter. A gap is a deletion or a load bug;
// facts that fall in one resolve to an ErrInGap miss, and this report is how a
// user finds them before the facts do. It reads every version of every key in
// range once.
func Gaps(r store.Reader, table string, opts GapOptions) iter.Seq2[KeyGaps, error] {
	return func(yield func(KeyGaps, error) bool) {
		s, t, release, err := open(r, table)
		if err != nil {
			yield(KeyGaps{}, err)
			return
		}
		defer release()
		sp, err := opts.Keys.span(t)
		if err != nil {
			yield(KeyGaps{}, err)
			return
		}
		var cur KeyGaps
		var tuple []byte
		flush := func() bool {
			cur.LateStart = opts.CheckStart && cur.First > opts.StartsAfter
			if tuple == nil || (len(cur.Gaps) == 0 && !cur.LateStart) {
				return true
			}
			return yield(cur, nil)
		}
		for v, err := range s.ScanHistory(t, sp, resolveTx(s, opts.Tx), store.NegInfinity, store.Infinity, nil) {
			if err != nil {
				yield(KeyGaps{}, err)
				return
			}
			if tuple != nil && bytes.Equal(tuple, v.Tuple()) {
				if v.ValidFrom > cur.Last {
					cur.Gaps = append(cur.Gaps, Period{From: cur.Last, To: v.ValidFrom})
				}
				cur.Last = v.ValidTo
				continue
			}
			if !flush() {
				return
			}
			tuple = append(tuple[:0], v.Tuple()...)
			cur = KeyGaps{Key: v.Key, First: v.ValidFrom, Last: v.ValidTo}
		}
		flush()
	}
}
