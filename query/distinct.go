package query

// distinctSet counts the values of a COUNT_DISTINCT set by distinctKey. While
// the set has held at most maxListed distinct values (a status column) they
// sit in a short list: a linear scan of a few keys, whose interned strings
// compare equal by pointer, costs less than hashing every key that enters or
// leaves. Past that they move to a map.
type distinctSet struct {
	list   []distinctCount
	n      int // values of the list with a count above zero
	m      map[distinctKey]int32
	mapped bool // the values are in m
}

type distinctCount struct {
	k distinctKey
	c int32
}

// maxListed is the most distinct values a distinctSet keeps in its list.
const maxListed = 8

// reset empties d, keeping its buffers.
func (d *distinctSet) reset() {
	d.list, d.n, d.mapped = d.list[:0], 0, false
	clear(d.m)
}

// add counts one more value k.
func (d *distinctSet) add(k distinctKey) {
	if !d.mapped {
		free := -1
		for i := range d.list {
			e := &d.list[i]
			if e.k == k {
				if e.c == 0 {
					d.n++
				}
				e.c++
				return
			}
			if e.c == 0 && free < 0 {
				free = i
			}
		}
		switch {
		case free >= 0:
			d.list[free], d.n = distinctCount{k: k, c: 1}, d.n+1
			return
		case len(d.list) < maxListed:
			d.list, d.n = append(d.list, distinctCount{k: k, c: 1}), d.n+1
			return
		}
		if d.m == nil {
			d.m = map[distinctKey]int32{}
		}
		for _, e := range d.list {
			if e.c > 0 {
				d.m[e.k] = e.c
			}
		}
		d.mapped = true
	}
	d.m[k]++
}

// remove counts one less value k, added before.
func (d *distinctSet) remove(k distinctKey) {
	if d.mapped {
		if d.m[k]--; d.m[k] == 0 {
			delete(d.m, k)
		}
		return
	}
	for i := range d.list {
		if e := &d.list[i]; e.k == k && e.c > 0 {
			if e.c--; e.c == 0 {
				d.n--
			}
			return
		}
	}
}

// len returns the number of distinct values counted.
func (d *distinctSet) len() int {
	if d.mapped {
		return len(d.m)
	}
	return d.n
}
