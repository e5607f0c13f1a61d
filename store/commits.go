package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file numbers commits and maps the numbers back to their times.
//
// Every commit takes the next commit number (meta
// "last_commit" plus one) and writes its number and transaction time in
// keyspace 0x07 (layout.CommitKey) in its own batch. A current record (tx_to
// open) holds the number of the commit that asserted it in place of that
// commit's time: a varint of 1-3 bytes where a time takes 8. The store maps
// the number back to its time as it decodes the record (Snapshot.commitTime),
// so every reader above the decoding sees times, as it would if the record
// held one. Retired records hold times: history keeps tx_from in its keys,
// which reads at past transaction times seek by.
//
// Invariants (Verify checks them): the numbers in 0x07 are 1, 2, ...,
// last_commit without a gap; each holds a transaction time no later than
// last_tx; every current record's number is one of them. Numbers are handed
// out in commit order, so a later commit has a greater number, but an
// import numbers the times of the records it rebuilds after the store's own
// commits, whatever those times are: nothing compares two numbers, only the
// times they map to.
//
// The map is cached by page (commitPage consecutive numbers) in the open
// store and shared by its snapshots: a number's time never changes once it
// is committed, and a snapshot asks only for numbers its records hold, all
// committed in its view. A page read by one snapshot holds the numbers that
// view had; a later snapshot that asks for a greater number of the same page
// reads the page again.

// commitPage is how many consecutive commit numbers one read of keyspace 0x07
// caches: a table written by small commits (one per request, or a change feed
// applied in small batches) holds a distinct number in nearly every record,
// and pays one read per commitPage of them.
const commitPage = 512

// maxCommitPages bounds the pages the store keeps (8 bytes per number: 4 MiB
// at 1,024 pages of 512); past it the oldest page read is dropped.
const maxCommitPages = 1024

// commitTimes is an open store's cache of keyspace 0x07.
type commitTimes struct {
	mu    sync.RWMutex
	pages map[uint64][]int64 // by n / commitPage: the times of the page's numbers from its first, as far as read
	order []uint64           // the pages in the order they were read, for eviction
}

// get returns the page holding n, if cached with n in it.
func (c *commitTimes) get(n uint64) ([]int64, bool) {
	c.mu.RLock()
	page, ok := c.pages[n/commitPage]
	c.mu.RUnlock()
	return page, ok && n%commitPage < uint64(len(page))
}

// put caches page p (index n / commitPage), replacing a shorter one.
func (c *commitTimes) put(p uint64, times []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[uint64][]int64{}
	}
	old, ok := c.pages[p]
	if ok && len(old) >= len(times) {
		return
	}
	if !ok {
		if len(c.order) >= maxCommitPages {
			delete(c.pages, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, p)
	}
	c.pages[p] = times // replaced, never changed in place: readers may hold the old one
}

// reset empties the cache, so that what is read next is read from a view:
// Verify checks the map as its view holds it, not as it was cached.
func (c *commitTimes) reset() {
	c.mu.Lock()
	c.pages, c.order = nil, nil
	c.mu.Unlock()
}

// errUnknownCommit: a record names a commit number keyspace 0x07 does not hold.
var errUnknownCommit = errors.New("unknown commit number")

// commitTime returns the transaction time of commit number n, as the
// snapshot's view holds it.
func (s *Snapshot) commitTime(n uint64) (int64, error) {
	if i := n - s.commitBase; n >= s.commitBase && i < uint64(len(s.commitPage)) {
		return s.commitPage[i], nil
	}
	page, err := s.db.commits.page(n, func() (engine.View, func() error, error) {
		return s.view, func() error { return nil }, nil
	})
	if err != nil {
		return 0, err
	}
	s.commitBase, s.commitPage = n/commitPage*commitPage, page
	return page[n%commitPage], nil
}

// commitTime returns the transaction time of commit number n as the store's
// newest view holds it, for readers of raw entries (dumps) that have no
// snapshot.
func (db *DB) commitTime(n uint64) (int64, error) {
	page, err := db.commits.page(n, func() (engine.View, func() error, error) {
		v, err := db.engine.View()
		if err != nil {
			return nil, nil, err
		}
		return v, v.Close, nil
	})
	if err != nil {
		return 0, err
	}
	return page[n%commitPage], nil
}

// page returns the page of the cache that holds commit number n: cached, or
// read from the view that view gives (and released with the function it
// returns) and cached. A view that does not hold n is corruption, since a
// reader asks only for numbers its records hold.
func (c *commitTimes) page(n uint64, view func() (engine.View, func() error, error)) ([]int64, error) {
	if page, ok := c.get(n); ok {
		return page, nil
	}
	v, release, err := view()
	if err != nil {
		return nil, err
	}
	page, err := readCommitPage(v, n/commitPage)
	if err = errors.Join(err, release()); err != nil {
		return nil, err
	}
	c.put(n/commitPage, page)
	if n%commitPage >= uint64(len(page)) {
		return nil, fmt.Errorf("%w: %w %d", ErrCorrupt, errUnknownCommit, n)
	}
	return page, nil
}

// readCommitPage reads the times of page p's numbers from v, from the page's
// first number (0 has none: page 0 starts with a placeholder) up to the first
// number v does not hold.
func readCommitPage(v engine.View, p uint64) ([]int64, error) {
	first := p * commitPage
	times := make([]int64, 0, commitPage)
	if first == 0 {
		times, first = append(times, 0), 1
	}
	it, err := v.NewIter(layout.CommitKey(first), layout.CommitKey((p+1)*commitPage))
	if err != nil {
		return nil, err
	}
	next := first
	for ok := it.First(); ok; ok = it.Next() {
		n, err := layout.DecodeCommitKey(it.Key())
		if err != nil || n != next {
			break // a gap ends the page: Verify reports it
		}
		tx, err := layout.DecodeCommitValue(it.Value())
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		times, next = append(times, tx), next+1
	}
	return times, errors.Join(it.Error(), it.Close())
}

// mapCommit sets the TxFrom of a decoded current record to the time of the
// commit number it holds.
func (s *Snapshot) mapCommit(t *Table, rv *encoding.RecordValue) error {
	if rv.TxCommit == 0 {
		return nil
	}
	tx, err := s.commitTime(rv.TxCommit)
	if err != nil {
		return fmt.Errorf("table %q record: %w", t.Name, err)
	}
	rv.TxFrom = tx
	return nil
}

// verifyCommits checks keyspace 0x07 against meta "last_commit" and
// "last_tx": the numbers 1 to last_commit each once, in order, none after it
// (invariant 5: the map agrees with the records that hold its numbers, which
// decoding checks record by record), and no commit time after the last
// transaction time (invariant 4).
func verifyCommits(s *Snapshot, rep *Report) error {
	last, err := readLastCommit(s.view)
	if err != nil {
		rep.add(Problem{Invariant: 0, Detail: fmt.Sprintf("meta last_commit: %v", err)})
		return nil
	}
	it, err := s.newIter([]byte{layout.Commits}, []byte{layout.Commits + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	want := uint64(1)
	for ok := it.First(); ok; ok = it.Next() {
		n, err := layout.DecodeCommitKey(it.Key())
		var tx int64
		if err == nil {
			tx, err = layout.DecodeCommitValue(it.Value())
		}
		switch {
		case err != nil:
			rep.add(Problem{Invariant: 0, Detail: fmt.Sprintf("commits key %x: %v", it.Key(), err)})
			continue
		case n != want:
			rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("commit number %d follows %d", n, want-1)})
		case n > last:
			rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("commit number %d is after the last commit, %d", n, last)})
		}
		if tx > s.lastTx {
			rep.add(Problem{Invariant: 4, Detail: fmt.Sprintf("commit %d at %d is after the last transaction time %d", n, tx, s.lastTx)})
		}
		want = n + 1
	}
	if err := it.Error(); err != nil {
		return err
	}
	if want <= last {
		rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("commits %d to %d are missing", want, last)})
	}
	return nil
}

// readLastCommit returns meta "last_commit" as v holds it.
func readLastCommit(v engine.View) (uint64, error) {
	var n uint64
	err := getMeta(v, layout.MetaLastCommit, &n)
	return n, err
}
