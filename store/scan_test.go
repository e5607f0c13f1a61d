package store_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// scanWorld is a small store written by random transactions, with what a
// brute-force reader needs: every key ever written and every commit's time.
type scanWorld struct {
	db   *store.DB
	tb   *store.Table
	keys []store.Key // sorted by encoded tuple
	txs  []int64
}

var pairs = store.TableDef{Name: "pairs", Key: []store.KeyColumn{{Name: "g", Type: store.String}, {Name: "n", Type: store.Int64}}}

func newScanWorld(t *testing.T, seed uint64, commits int) *scanWorld {
	t.Helper()
	var keys []store.Key
	for g := range 3 {
		for n := range 4 {
			keys = append(keys, store.Key{fmt.Sprintf("g%d", g), int64(n - 1)})
		}
	}
	return buildWorld(t, keys, commits, rand.New(rand.NewPCG(seed, 7)), randomWrite)
}

// buildWorld writes commits random transactions of one to three writes
// (write, each on a random key of keys) to a new in-memory store.
func buildWorld(t *testing.T, keys []store.Key, commits int, rng *rand.Rand, write func(*txn.Tx, *rand.Rand, store.Key) error) *scanWorld {
	t.Helper()
	db := testutil.OpenTicking(t, 1)
	tb, err := db.CreateTable(pairs)
	if err != nil {
		t.Fatal(err)
	}
	w := &scanWorld{db: db, tb: tb, keys: keys}
	w.sortKeys(t)
	for range commits {
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			for range 1 + rng.IntN(3) {
				if err := write(tx, rng, w.keys[rng.IntN(len(w.keys))]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tx != 0 {
			w.txs = append(w.txs, c.Tx)
		}
	}
	return w
}

func randomWrite(tx *txn.Tx, rng *rand.Rand, key store.Key) error {
	from := int64(rng.IntN(40))
	to := from + 1 + int64(rng.IntN(15))
	if rng.IntN(6) == 0 {
		to = store.Infinity
	}
	attrs := store.Attrs{"v": int64(rng.IntN(4))}
	var err error
	switch rng.IntN(5) {
	case 0, 1:
		err = tx.Put("pairs", key, attrs, from, to)
	case 2:
		err = tx.Delete("pairs", key, from, to)
	case 3:
		_, err = tx.Upsert("pairs", key, attrs, from)
	case 4:
		_, err = tx.DeleteAt("pairs", key, from)
	}
	return err
}

func (w *scanWorld) tuple(t *testing.T, k store.Key) []byte {
	b, err := w.tb.AppendKey(nil, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (w *scanWorld) sortKeys(t *testing.T) {
	slices.SortFunc(w.keys, func(a, b store.Key) int { return bytes.Compare(w.tuple(t, a), w.tuple(t, b)) })
}

// records returns every record of every key, by key, in audit order.
func (w *scanWorld) records(t *testing.T, s *store.Snapshot) [][]store.Version {
	out := make([][]store.Version, len(w.keys))
	for i, k := range w.keys {
		recs, err := s.KeyRecords(w.tb, w.tuple(t, k))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = recs
	}
	return out
}

// alive returns a key's records alive at tx in valid order.
func alive(recs []store.Version, tx int64) []store.Version {
	var out []store.Version
	for _, r := range recs {
		if r.AliveAt(tx) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Version) int { return cmp.Compare(a.ValidFrom, b.ValidFrom) })
	return out
}

func (w *scanWorld) inSpan(t *testing.T, k store.Key, sp store.Span) bool {
	tu := w.tuple(t, k)
	return bytes.Compare(tu, sp.Start) >= 0 && (sp.End == nil || bytes.Compare(tu, sp.End) < 0)
}

func (w *scanWorld) randomSpan(t *testing.T, rng *rand.Rand) store.Span {
	enc := func(k store.Key) []byte {
		b, err := w.tb.AppendKeyPrefix(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	g := fmt.Sprintf("g%d", rng.IntN(4))
	switch rng.IntN(5) {
	case 0:
		return store.Span{}
	case 1:
		return store.PrefixSpan(enc(store.Key{g}))
	case 2:
		return store.Span{Start: enc(store.Key{g, int64(rng.IntN(4) - 1)})}
	case 3:
		return store.Span{End: enc(store.Key{g})}
	}
	return store.Span{Start: enc(store.Key{"g0", int64(rng.IntN(4) - 1)}), End: enc(store.Key{g, int64(rng.IntN(4) - 1)})}
}

func (w *scanWorld) randomTx(rng *rand.Rand) int64 {
	if rng.IntN(3) == 0 {
		return w.txs[len(w.txs)-1] + int64(rng.IntN(2)) // latest
	}
	return w.txs[rng.IntN(len(w.txs))] - int64(rng.IntN(2))
}

func render(vs []store.Version) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func collect(t *testing.T, seq func(func(store.Version, error) bool)) []store.Version {
	t.Helper()
	var out []store.Version
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestScanAtMatchesBruteForce(t *testing.T) {
	for seed := range uint64(8) {
		w := newScanWorld(t, seed, 40)
		s, err := w.db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		recs := w.records(t, s)
		rng := rand.New(rand.NewPCG(seed, 9))
		for range 200 {
			valid, tx, sp := int64(rng.IntN(60)-5), w.randomTx(rng), w.randomSpan(t, rng)
			var want []store.Version
			for i, k := range w.keys {
				if !w.inSpan(t, k, sp) {
					continue
				}
				for _, v := range alive(recs[i], tx) {
					if v.Covers(valid) {
						want = append(want, v)
					}
				}
			}
			got := collect(t, s.ScanAt(w.tb, sp, valid, tx))
			if render(got) != render(want) {
				t.Fatalf("seed %d ScanAt(span %x..%x, valid %d, tx %d):\n%s\nwant\n%s", seed, sp.Start, sp.End, valid, tx, render(got), render(want))
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScanHistoryMatchesBruteForce(t *testing.T) {
	for seed := range uint64(8) {
		w := newScanWorld(t, seed, 40)
		s, err := w.db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		recs := w.records(t, s)
		rng := rand.New(rand.NewPCG(seed, 10))
		for range 200 {
			tx, sp := w.randomTx(rng), w.randomSpan(t, rng)
			from := int64(rng.IntN(50) - 5)
			to := from + 1 + int64(rng.IntN(30))
			if rng.IntN(4) == 0 {
				from, to = store.NegInfinity, store.Infinity
			}
			var want []store.Version
			for i, k := range w.keys {
				if !w.inSpan(t, k, sp) {
					continue
				}
				for _, v := range alive(recs[i], tx) {
					if v.ValidFrom < to && v.ValidTo > from {
						want = append(want, v)
					}
				}
			}
			got := collect(t, s.ScanHistory(w.tb, sp, tx, from, to, nil))
			if render(got) != render(want) {
				t.Fatalf("seed %d ScanHistory(span %x..%x, tx %d, [%d, %d)):\n%s\nwant\n%s", seed, sp.Start, sp.End, tx, from, to, render(got), render(want))
			}
			// Resuming after any row yields exactly the rows after it.
			for i := range want {
				after := &store.HistoryPos{Tuple: want[i].Tuple(), ValidFrom: want[i].ValidFrom}
				rest := collect(t, s.ScanHistory(w.tb, sp, tx, from, to, after))
				if render(rest) != render(want[i+1:]) {
					t.Fatalf("seed %d resumed after row %d:\n%s\nwant\n%s", seed, i, render(rest), render(want[i+1:]))
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecordBySKMatchesBruteForce(t *testing.T) {
	w := newScanWorld(t, 3, 60)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var all []store.Version
	var maxSK uint64
	for _, recs := range w.records(t, s) {
		all = append(all, recs...)
		for _, r := range recs {
			maxSK = max(maxSK, r.SK)
		}
	}
	for sk := uint64(0); sk <= maxSK+1; sk++ {
		for _, tx := range append(slices.Clone(w.txs), w.txs[0]-1, store.Infinity) {
			var want *store.Version
			for i := range all {
				if r := &all[i]; r.SK == sk && r.TxFrom <= tx && (want == nil || r.TxFrom > want.TxFrom) {
					want = r
				}
			}
			got, found, err := s.RecordBySK(w.tb, sk, tx)
			if err != nil {
				t.Fatal(err)
			}
			if found != (want != nil) || (found && got.String() != want.String()) {
				t.Fatalf("RecordBySK(%d, %d) = %v %v, want %v", sk, tx, got.String(), found, want)
			}
		}
	}
}

type logRow struct {
	tx   int64
	op   store.LogOp
	line string
}

func TestTxLogMatchesBruteForce(t *testing.T) {
	w := newScanWorld(t, 5, 50)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []logRow
	for _, recs := range w.records(t, s) {
		for _, r := range recs {
			want = append(want, logRow{r.TxFrom, store.LogAssert, r.String()})
			if r.TxTo != store.Infinity {
				want = append(want, logRow{r.TxTo, store.LogRetire, r.String()})
			}
		}
	}
	sortRows := func(rows []logRow) {
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			if a.tx != b.tx {
				return a.tx < b.tx
			}
			if a.op != b.op {
				return a.op < b.op
			}
			return a.line < b.line
		})
	}
	sortRows(want)
	var entries []store.LogEntry
	for e, err := range s.TxLog(w.tb, store.LogPos{Tx: store.NegInfinity}, store.Infinity) {
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	var got []logRow
	for i, e := range entries {
		if i > 0 && !(e.Pos.Tx > entries[i-1].Pos.Tx || (e.Pos.Tx == entries[i-1].Pos.Tx && e.Pos.Ordinal > entries[i-1].Pos.Ordinal)) {
			t.Fatalf("entry %d position %+v does not follow %+v", i, e.Pos, entries[i-1].Pos)
		}
		got = append(got, logRow{e.Pos.Tx, e.Op, e.Version.String()})
	}
	sortRows(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("TxLog:\n%v\nwant\n%v", got, want)
	}
	// Windows (T1, T2] and resumption from every position.
	for _, t1 := range w.txs[:10] {
		for _, t2 := range w.txs[len(w.txs)-10:] {
			n := 0
			for e, err := range s.TxLog(w.tb, store.LogPos{Tx: t1 + 1}, t2) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Pos.Tx <= t1 || e.Pos.Tx > t2 {
					t.Fatalf("window (%d, %d]: entry at %d", t1, t2, e.Pos.Tx)
				}
				n++
			}
			wantN := 0
			for _, r := range want {
				if r.tx > t1 && r.tx <= t2 {
					wantN++
				}
			}
			if n != wantN {
				t.Fatalf("window (%d, %d]: %d entries, want %d", t1, t2, n, wantN)
			}
		}
	}
	for i := range entries {
		k := i + 1
		for e, err := range s.TxLog(w.tb, entries[i].Pos.Next(), store.Infinity) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Pos != entries[k].Pos {
				t.Fatalf("resumed after %+v: got %+v, want %+v", entries[i].Pos, e.Pos, entries[k].Pos)
			}
			k++
		}
		if k != len(entries) {
			t.Fatalf("resumed after %+v: stopped at %d of %d", entries[i].Pos, k, len(entries))
		}
	}
}

func TestLookupSortedMatchesVersionAt(t *testing.T) {
	for seed := range uint64(6) {
		w := newScanWorld(t, seed, 40)
		s, err := w.db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		for _, attrs := range []bool{false, true} {
			probes := make([]store.Probe, 300)
			extra := store.Key{"g9", int64(0)} // a key never written
			for i := range probes {
				k := extra
				if rng.IntN(10) > 0 {
					k = w.keys[rng.IntN(len(w.keys))]
				}
				probes[i] = store.Probe{Tuple: w.tuple(t, k), Valid: int64(rng.IntN(60) - 5), Tx: w.randomTx(rng)}
			}
			slices.SortFunc(probes, func(a, b store.Probe) int {
				if c := bytes.Compare(a.Tuple, b.Tuple); c != 0 {
					return c
				}
				return cmp.Compare(b.Valid, a.Valid)
			})
			seen := 0
			err := s.LookupSorted(w.tb, probes, attrs, func(i int, v *store.Version, r store.MissReason) {
				if i != seen {
					t.Fatalf("fn called for probe %d, want %d", i, seen)
				}
				seen++
				p := probes[i]
				want, wr, err := s.VersionAt(w.tb, p.Tuple, p.Valid, p.Tx)
				if err != nil {
					t.Fatal(err)
				}
				if r != wr {
					t.Fatalf("seed %d probe %d (%x at %d tx %d): reason %v, want %v", seed, i, p.Tuple, p.Valid, p.Tx, r, wr)
				}
				if r != store.Found {
					return
				}
				if v.SK != want.SK || v.ValidFrom != want.ValidFrom || v.ValidTo != want.ValidTo || v.TxFrom != want.TxFrom ||
					v.TxTo != want.TxTo || !bytes.Equal(v.Tuple(), p.Tuple) {
					t.Fatalf("seed %d probe %d: %s, want %s", seed, i, v.String(), want.String())
				}
				if attrs != (v.Attrs != nil) || (attrs && fmt.Sprint(v.Attrs) != fmt.Sprint(want.Attrs)) {
					t.Fatalf("seed %d probe %d attrs %v: %v, want %v", seed, i, attrs, v.Attrs, want.Attrs)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen != len(probes) {
				t.Fatalf("fn called %d times for %d probes", seen, len(probes))
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLookupSortedRejectsUnsorted(t *testing.T) {
	w := newScanWorld(t, 1, 5)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := w.tuple(t, w.keys[0]), w.tuple(t, w.keys[1])
	for _, probes := range [][]store.Probe{
		{{Tuple: b, Tx: store.Infinity}, {Tuple: a, Tx: store.Infinity}},
		{{Tuple: a, Valid: 1, Tx: store.Infinity}, {Tuple: a, Valid: 2, Tx: store.Infinity}},
	} {
		calls := 0
		err := s.LookupSorted(w.tb, probes, false, func(int, *store.Version, store.MissReason) { calls++ })
		if err == nil || calls != 0 {
			t.Fatalf("unsorted probes: err %v after %d calls", err, calls)
		}
	}
}

func TestScansOnEmptyTableAndSpan(t *testing.T) {
	w := newScanWorld(t, 1, 0)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := w.tuple(t, w.keys[0]), w.tuple(t, w.keys[1])
	for _, sp := range []store.Span{{}, {Start: b, End: a}, {Start: a, End: a}} {
		for _, tx := range []int64{0, store.Infinity} {
			if got := collect(t, s.ScanAt(w.tb, sp, 0, tx)); len(got) != 0 {
				t.Fatal(got)
			}
			if got := collect(t, s.ScanHistory(w.tb, sp, tx, store.NegInfinity, store.Infinity, nil)); len(got) != 0 {
				t.Fatal(got)
			}
		}
	}
	for e, err := range s.TxLog(w.tb, store.LogPos{Tx: store.NegInfinity}, store.Infinity) {
		t.Fatal(e, err)
	}
	if _, found, err := s.RecordBySK(w.tb, 1, store.Infinity); found || err != nil {
		t.Fatal(found, err)
	}
}

// TestEarlyExitReleasesIterators breaks out of every scan after one row, then
// closes the snapshot and the store: Pebble's Close fails on leaked iterators.
func TestEarlyExitReleasesIterators(t *testing.T) {
	w := newScanWorld(t, 2, 30)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	past := w.txs[len(w.txs)/2]
	for _, tx := range []int64{store.Infinity, past} {
		for range s.ScanAt(w.tb, store.Span{}, 10, tx) {
			break
		}
		for range s.ScanHistory(w.tb, store.Span{}, tx, store.NegInfinity, store.Infinity, nil) {
			break
		}
	}
	for range s.TxLog(w.tb, store.LogPos{Tx: store.NegInfinity}, store.Infinity) {
		break
	}
	fork, err := s.Fork()
	if err != nil {
		t.Fatal(err)
	}
	for range fork.ScanAt(w.tb, store.Span{}, 10, past) {
		break
	}
	if err := fork.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.db.Close(); err != nil {
		t.Fatalf("closing the store after early exits: %v", err)
	}
}

// TestScanIsolatedFromLaterCommits commits while a scan is in progress: the scan
// reads its snapshot only.
func TestScanIsolatedFromLaterCommits(t *testing.T) {
	w := newScanWorld(t, 4, 30)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := render(collect(t, s.ScanHistory(w.tb, store.Span{}, store.Infinity, store.NegInfinity, store.Infinity, nil)))
	var got []store.Version
	rng := rand.New(rand.NewPCG(4, 4))
	for v, err := range s.ScanHistory(w.tb, store.Span{}, store.Infinity, store.NegInfinity, store.Infinity, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		if _, err := txn.Update(w.db, func(tx *txn.Tx) error {
			return randomWrite(tx, rng, w.keys[rng.IntN(len(w.keys))])
		}); err != nil {
			t.Fatal(err)
		}
	}
	if render(got) != want {
		t.Fatalf("scan during commits:\n%s\nwant\n%s", render(got), want)
	}
}

// TestForksReadInParallel runs lookups on several forks at once (go test -race
// checks that they share nothing but the view).
func TestForksReadInParallel(t *testing.T) {
	w := newScanWorld(t, 6, 40)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := render(collect(t, s.ScanAt(w.tb, store.Span{}, 12, w.txs[10])))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		f, err := s.Fork()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.Close()
			for range 20 {
				var got []store.Version
				for v, err := range f.ScanAt(w.tb, store.Span{}, 12, w.txs[10]) {
					if err != nil {
						errs <- err
						return
					}
					got = append(got, v)
				}
				if render(got) != want {
					errs <- fmt.Errorf("fork read\n%s\nwant\n%s", render(got), want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
