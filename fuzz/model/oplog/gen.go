package oplog

import (
	"math/rand/v2"

	"github.com/bitempo/bitempo/fuzz/model"
)

// Random returns a log of n transactions over DefaultTables and DefaultKeys drawn
// from rng: mostly one to four operations each, about one in eight ending in an
// error or a panic, a few operations with invalid periods or attributes, and a
// wall clock that usually advances and sometimes steps back. With edge, one
// attribute value in three comes from the edge pools (see edgePools).
func Random(rng *rand.Rand, n int, edge bool) Log {
	g := &generator{next: func(k int) int { return rng.IntN(k) }, edge: edge}
	l := Log{Tables: DefaultTables, Keys: DefaultKeys}
	clock := int64(1000)
	for range n {
		t := Txn{End: Commit}
		switch r := rng.IntN(16); {
		case r == 0:
			t.End = ReturnError
		case r == 1:
			t.End = Panic
		}
		clock += int64(rng.IntN(4))
		if rng.IntN(20) == 0 {
			clock -= int64(rng.IntN(10))
		}
		t.Clock = clock
		t.Vacuum = rng.IntN(25) == 0
		for range 1 + rng.IntN(4) {
			t.Ops = append(t.Ops, g.op())
		}
		l.Txns = append(l.Txns, t)
	}
	return l
}

// Decode turns fuzz input into a log over DefaultTables and DefaultKeys. Every
// input decodes to some log: a byte b%8 of 0-5 starts an operation (put, put,
// delete, upsert, upsert, delete-at) whose table, key, times and attributes come
// from the bytes that follow; 6 commits the transaction and 7 makes it fail (the
// next byte picks error or panic); the byte after either moves the clock by
// b%8-2. Bytes past the end read as zero; decoding stops at the end of the input
// or after maxOps operations.
func Decode(data []byte, maxOps int) Log {
	r := &byteReader{b: data}
	g := &generator{next: func(k int) int { return int(r.byte()) % k }}
	l := Log{Tables: DefaultTables, Keys: DefaultKeys}
	clock := int64(1000)
	cur := Txn{Clock: clock}
	for ops := 0; len(r.b) > 0 && ops < maxOps; {
		switch c := r.byte() % 8; c {
		case 6, 7: // end the transaction
			if c == 7 {
				cur.End = End(1 + r.byte()%2)
			}
			clock += int64(r.byte()%8) - 2
			l.Txns = append(l.Txns, cur)
			cur = Txn{Clock: clock}
		default:
			k := decodeKinds[c]
			if k == DeleteAt && len(r.b) > 0 && r.b[0] >= 0xf0 { // a rare erasure
				r.byte()
				k = Erase
			}
			cur.Ops = append(cur.Ops, g.opOf(k))
			ops++
		}
	}
	if len(cur.Ops) > 0 {
		l.Txns = append(l.Txns, cur)
	}
	return l
}

// decodeKinds maps the operation bytes 0-5 of Decode's input to operations; a
// 5 followed by a byte of 0xf0 or more is an Erase.
var decodeKinds = [6]Kind{Put, Put, Delete, Upsert, Upsert, DeleteAt}

type byteReader struct{ b []byte }

func (r *byteReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// generator draws operations from a source of small random numbers: next(k)
// returns a number in [0, k). Rare choices take the largest values of next, so
// that the zero bytes Decode reads past the end of its input make common, valid
// operations.
type generator struct {
	next   func(k int) int
	edge   bool
	recent map[string][]map[string]any // per table/key, the last records written
}

// op returns an operation: about 35% upserts, 30% puts, 20% deletes, 15%
// delete-ats, and one erasure in 60 (each erasure's commit purges, which costs
// a flush and a compaction).
func (g *generator) op() Op {
	if g.next(60) == 0 {
		return g.opOf(Erase)
	}
	switch r := g.next(20); {
	case r < 7:
		return g.opOf(Upsert)
	case r < 13:
		return g.opOf(Put)
	case r < 17:
		return g.opOf(Delete)
	}
	return g.opOf(DeleteAt)
}

func (g *generator) opOf(k Kind) Op {
	op := Op{Kind: k, Table: DefaultTables[g.next(len(DefaultTables))].Name, Key: DefaultKeys[g.next(len(DefaultKeys))]}
	switch k {
	case Put, Delete:
		op.From, op.To = g.period()
		if k == Put {
			op.Attrs = g.attrs(op.Table + "/" + op.Key)
		}
	case Upsert:
		op.From = g.instant()
		op.Attrs = g.attrs(op.Table + "/" + op.Key)
	case DeleteAt:
		op.From = g.instant()
	}
	return op
}

// period returns [from, to): usually short and inside [0, MaxValid+1], sometimes
// open on either side, rarely empty or inverted (an error the op must report).
func (g *generator) period() (int64, int64) {
	from := int64(g.next(MaxValid + 1))
	if g.next(12) == 11 {
		from = model.NegInfinity
	}
	switch r := g.next(24); {
	case r >= 22:
		return from, model.Infinity
	case r == 21:
		return from, from - int64(g.next(2)) // invalid
	default:
		if from == model.NegInfinity {
			return from, int64(g.next(MaxValid + 1))
		}
		return from, from + 1 + int64(g.next(6))
	}
}

// instant returns an effective time: usually in [0, MaxValid], rarely ±∞.
func (g *generator) instant() int64 {
	switch g.next(40) {
	case 38:
		return model.NegInfinity
	case 39:
		return model.Infinity // no version can be in effect there: an invalid period
	}
	return int64(g.next(MaxValid + 1))
}

// attrs returns a random attribute record for a write to key (table/key). Two
// times in three it starts from one of the last few records written to that
// key and changes at most one attribute, so that upserts often meet
// tracked-equal or nearly equal versions; otherwise each attribute is present
// with probability 5/8, its value drawn by value. Rarely an attribute is named
// like the key column (an error).
func (g *generator) attrs(key string) map[string]any {
	a := map[string]any{}
	if g.recent == nil {
		g.recent = map[string][]map[string]any{}
	}
	recent := g.recent[key]
	if len(recent) > 0 && g.next(3) != 0 {
		for k, v := range recent[g.next(len(recent))] {
			a[k] = v
		}
		if g.next(2) == 0 {
			name := attrNames[g.next(len(attrNames))]
			if g.next(4) == 3 {
				delete(a, name)
			} else {
				a[name] = g.value(name)
			}
		}
	} else {
		for _, name := range attrNames {
			if g.next(8) < 5 {
				a[name] = g.value(name)
			}
		}
	}
	if g.next(64) == 63 {
		a[KeyColumn] = "x"
	}
	if len(recent) == recentAttrs {
		recent = recent[1:]
	}
	g.recent[key] = append(recent, a)
	return a
}

// recentAttrs is how many records per key attrs remembers for reuse.
const recentAttrs = 4

// value draws a value for attribute name from its own pool or, one time in six,
// any pool; with edge, one time in three from its edge pool.
func (g *generator) value(name string) any {
	pool := pools[name]
	if g.next(6) == 5 {
		pool = pools[attrNames[g.next(len(attrNames))]]
	}
	if g.edge && g.next(3) == 0 {
		pool = edgePools[name]
	}
	return pool[g.next(len(pool))]
}
