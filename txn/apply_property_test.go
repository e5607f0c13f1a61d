package txn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/fuzz/model"
	"github.com/bitempo/bitempo/store"
	"pgregory.net/rapid"
)

// TestApplyProperty checks Apply against the reference model (model.Derive, a
// from-scratch derivation written for clarity) for random event sets: applied in several arrival orders
// and batchings, with duplicated events and replayed batch ids, the table after
// every batch equals the reference derivation of the events applied so far,
// Verify is clean, every arrival ends with byte-identical versions, and reading
// at an earlier batch's transaction time returns the table as it stood then.
// On failure rapid prints the seed and a shrunk case.
func TestApplyProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		def := drawChangesDef(rt)
		events := rapid.SliceOfN(drawEvent(), 1, 24).Draw(rt, "events")
		var finals []string
		for arrival := range 3 {
			order := events
			if arrival > 0 {
				order = rapid.Permutation(events).Draw(rt, fmt.Sprintf("order%d", arrival))
			}
			finals = append(finals, runArrival(rt, def, order, arrival))
		}
		if def.Lateness == 0 {
			for i := 1; i < len(finals); i++ {
				if finals[i] != finals[0] {
					rt.Fatalf("arrival %d ends with\n%s\narrival 0 with\n%s", i, finals[i], finals[0])
				}
			}
		}
	})
}

// drawChangesDef draws a changes table: tracked attributes, comparison options,
// partial updates, granularity and lateness.
func drawChangesDef(rt *rapid.T) store.TableDef {
	def := store.TableDef{Name: "t", Kind: store.Changes, Key: []store.KeyColumn{{Name: "k", Type: store.String}}}
	if rapid.Bool().Draw(rt, "untrackedY") {
		def.TrackExcept = []string{"y"}
	}
	if rapid.Bool().Draw(rt, "foldY") {
		def.Compare = map[string]store.CompareOptions{"y": {Trim: true, FoldCase: true}}
	}
	def.IgnoreNulls = rapid.Bool().Draw(rt, "ignoreNulls")
	def.Granularity = rapid.SampledFrom([]int64{0, 0, 3}).Draw(rt, "granularity")
	def.Lateness = rapid.SampledFrom([]int64{0, 0, 0, 4}).Draw(rt, "lateness")
	return def
}

// drawEvent draws events over few keys, times and values, so that ties,
// collapses, runs and tombstones are frequent.
func drawEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(rt *rapid.T) Event {
		e := Event{
			Key: store.Key{rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "key")},
			At:  int64(rapid.IntRange(-4, 12).Draw(rt, "at")),
			Seq: int64(rapid.IntRange(0, 1).Draw(rt, "seq")),
			Op:  rapid.SampledFrom([]Op{OpUpsert, OpUpsert, OpUpsert, OpDelete}).Draw(rt, "op"),
		}
		if e.Op == OpUpsert {
			e.Attrs = store.Attrs{}
			if x := rapid.IntRange(0, 3).Draw(rt, "x"); x < 3 {
				e.Attrs["x"] = []any{int64(1), int64(2), nil}[x]
			}
			if y := rapid.IntRange(0, 3).Draw(rt, "y"); y < 3 {
				e.Attrs["y"] = []string{"p", " P", "q"}[y]
			}
		}
		return e
	})
}

// runArrival applies events in the given order, split into random batches with
// random duplicates and replays, and groups runs of batches into one
// transaction. Inside a transaction, Applys are checked at random through
// Tx.Versions (read-your-writes); after each commit the store is checked and
// verified. It returns the final versions, rendered byte-exactly.
func runArrival(rt *rapid.T, def store.TableDef, order []Event, arrival int) string {
	db, err := store.Open("", store.Options{InMemory: true, NoSync: true})
	if err != nil {
		rt.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(def)
	if err != nil {
		rt.Fatal(err)
	}
	label := func(s string) string { return fmt.Sprintf("%s%d", s, arrival) }
	var batches [][]Event
	for rest := order; len(rest) > 0; {
		n := len(rest)
		if arrival > 0 {
			n = 1 + rapid.IntRange(0, len(rest)-1).Draw(rt, label("batch"))
		}
		batches = append(batches, slices.Clone(rest[:n]))
		rest = rest[n:]
	}
	var applied []Event
	var committed []int // indexes of the batches that committed
	type past struct {
		tx   int64
		want string
	}
	var history []past
	for next := 0; next < len(batches); {
		group := 1 + rapid.IntRange(0, 2).Draw(rt, label("perTx"))
		var pending []int
		c, err := Update(db, func(tx *Tx) error {
			for ; group > 0 && next < len(batches); group, next = group-1, next+1 {
				batch := batches[next]
				if len(applied) > 0 && rapid.Bool().Draw(rt, label("dup")) {
					batch = append(batch, applied[rapid.IntRange(0, len(applied)-1).Draw(rt, label("dupOf"))])
					batches[next] = batch
				}
				if done := append(slices.Clone(committed), pending...); len(done) > 0 && rapid.IntRange(0, 3).Draw(rt, label("replay")) == 0 {
					i := done[rapid.IntRange(0, len(done)-1).Draw(rt, label("replayOf"))]
					if res, err := tx.Apply("t", fmt.Sprintf("b%d", i), batch); err != nil || !res.Replayed {
						return fmt.Errorf("replay of batch %d: %+v, %v", i, res, err)
					}
				}
				res, err := tx.Apply("t", fmt.Sprintf("b%d", next), batch)
				if errors.Is(err, ErrTooLate) && def.Lateness > 0 {
					continue // rejected whole; the reference never sees it
				}
				if err != nil {
					return fmt.Errorf("apply b%d %v: %w", next, batch, err)
				}
				if res.Accepted+res.Duplicates > len(batch) || res.Accepted+res.Duplicates+res.Conflicts < len(batch) {
					return fmt.Errorf("apply b%d: counts %+v do not account for %d events", next, res, len(batch))
				}
				pending = append(pending, next)
				applied = append(applied, batch...)
				if !rapid.Bool().Draw(rt, label("readInTx")) {
					continue // reading completes partial states: not always
				}
				want := reference(tbl, applied)
				if got := renderInTx(rt, tx, applied); got != want {
					return fmt.Errorf("inside the transaction after b%d of %v:\ngot\n%s\nwant\n%s", next, applied, got, want)
				}
			}
			return nil
		})
		if err != nil {
			rt.Fatal(err)
		}
		committed = append(committed, pending...)
		want := reference(tbl, applied)
		if got := renderStored(rt, db, tbl, store.Infinity); got != want {
			rt.Fatalf("after commit %d of %v:\ngot\n%s\nwant\n%s", c.Tx, applied, got, want)
		}
		if rep, err := store.Verify(db); err != nil || !rep.OK() {
			rt.Fatalf("verify after commit %d: %v %v", c.Tx, err, rep)
		}
		if c.Tx != 0 {
			history = append(history, past{c.Tx, want})
		}
	}
	for i, h := range history {
		if got := renderStored(rt, db, tbl, h.tx); got != h.want {
			rt.Fatalf("read at tx %d (commit %d):\ngot\n%s\nwant\n%s", h.tx, i, got, h.want)
		}
	}
	return renderStored(rt, db, tbl, store.Infinity)
}

// renderInTx renders, through Tx.Versions, the versions of every key the events
// mention, as renderStored does.
func renderInTx(rt *rapid.T, tx *Tx, events []Event) string {
	var keys []string
	for _, e := range events {
		keys = append(keys, e.Key[0].(string))
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range slices.Compact(keys) {
		vs, err := tx.Versions("t", store.Key{k})
		if err != nil {
			rt.Fatal(err)
		}
		for _, v := range vs {
			writeVersion(&b, v.Key[0].(string), v.ValidFrom, v.ValidTo, v.Attrs)
		}
	}
	return b.String()
}

// reference derives the table from scratch with the reference model
// (model.Derive) and renders it like renderStored.
func reference(tbl *store.Table, events []Event) string {
	ref := model.ChangesTableOf(tbl.TableDef)
	in := make([]model.Event, len(events))
	for i, e := range events {
		in[i] = model.Event{Key: e.Key[0].(string), At: e.At, Seq: e.Seq, Delete: e.Op == OpDelete, Attrs: model.Attrs(e.Attrs)}
	}
	var b strings.Builder
	for _, v := range ref.Derive(in) {
		writeVersion(&b, v.Key, v.From, v.To, store.Attrs(v.Attrs))
	}
	return b.String()
}

// writeVersion is the one line every renderer writes per version: key, valid
// period and the canonical attribute bytes.
func writeVersion(b *strings.Builder, key string, from, to int64, attrs store.Attrs) {
	enc, _ := encoding.AppendAttrs(nil, attrs)
	fmt.Fprintf(b, "%s [%d, %d) %x\n", key, from, to, enc)
}

// renderStored renders the versions of every key of the table alive at tx, in
// the same form as reference: valid periods and attribute bytes, no sk.
func renderStored(rt *rapid.T, db *store.DB, tbl *store.Table, tx int64) string {
	s, err := db.Snapshot()
	if err != nil {
		rt.Fatal(err)
	}
	defer s.Close()
	tuples, err := s.ChangesKeys(tbl)
	if err != nil {
		rt.Fatal(err)
	}
	var b strings.Builder
	for _, tuple := range tuples {
		vs, err := s.KeyVersions(tbl, tuple, tx)
		if err != nil {
			rt.Fatal(err)
		}
		for _, v := range vs {
			writeVersion(&b, v.Key[0].(string), v.ValidFrom, v.ValidTo, v.Attrs)
		}
	}
	return b.String()
}
