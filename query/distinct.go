package query

// COUNT_DISTINCT counts in two steps. When a set of members is about to be
// evaluated (newAccums), a distinctDict numbers the distinct values of the
// feature's column among them, once per member: each member gets a dense id,
// or -1 for null. Features that count the same column (over other windows)
// copy the first one's ids. Adding and removing members then only counts ids in a
// distinctSet, an array indexed by id: no value is hashed or compared while
// a backfill's rows are computed, however many rows a member takes part in.

// distinctDict gives the distinct values of a column dense ids from 0, by
// distinctKey. While it has seen at most maxListed values (a status column)
// they sit in a short list: a linear scan of a few keys, whose interned
// strings compare equal by pointer, costs less than hashing each one. Past
// that they move to a map.
type distinctDict struct {
	list   []distinctKey // the values by id, while not mapped
	m      map[distinctKey]int32
	n      int32 // ids given
	mapped bool  // the values are in m
}

// maxListed is the most distinct values a distinctDict keeps in its list.
const maxListed = 8

// reset forgets every value, keeping d's buffers.
func (d *distinctDict) reset() {
	d.list, d.n, d.mapped = d.list[:0], 0, false
	clear(d.m)
}

// id returns k's id, giving it the next one if d has not seen it.
func (d *distinctDict) id(k distinctKey) int32 {
	if !d.mapped {
		for i := range d.list {
			if d.list[i] == k {
				return int32(i)
			}
		}
		if len(d.list) < maxListed {
			d.list = append(d.list, k)
			d.n++
			return d.n - 1
		}
		if d.m == nil {
			d.m = make(map[distinctKey]int32, 2*maxListed)
		}
		for i, e := range d.list {
			d.m[e] = int32(i)
		}
		d.mapped = true
	}
	if id, ok := d.m[k]; ok {
		return id
	}
	d.m[k] = d.n
	d.n++
	return d.n - 1
}

// distinctSet counts the members of a COUNT_DISTINCT set per value id
// (distinctDict) and how many ids have a count above zero.
type distinctSet struct {
	counts  []int32 // per id
	touched []int32 // ids whose count rose from zero since the last reset
	n       int     // ids with a count above zero
}

// resize empties s for ids below n, keeping its buffers.
func (s *distinctSet) resize(n int) {
	s.counts = append(s.counts[:0], make([]int32, n)...)
	s.touched, s.n = s.touched[:0], 0
}

// reset empties s. It costs the number of ids counted since the last reset,
// not the number of ids, so a direct evaluation's rows each pay for their
// own members only.
func (s *distinctSet) reset() {
	if len(s.touched) >= len(s.counts) {
		clear(s.counts)
	} else {
		for _, id := range s.touched {
			s.counts[id] = 0
		}
	}
	s.touched, s.n = s.touched[:0], 0
}

// add counts one more member of value id.
func (s *distinctSet) add(id int32) {
	if s.counts[id] == 0 {
		s.n++
		s.touched = append(s.touched, id)
	}
	s.counts[id]++
}

// remove counts one less member of value id, added before.
func (s *distinctSet) remove(id int32) {
	if s.counts[id]--; s.counts[id] == 0 {
		s.n--
	}
}

// len returns the number of distinct values counted.
func (s *distinctSet) len() int { return s.n }
