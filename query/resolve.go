package query

import (
	"fmt"
	"slices"
	"sync"

	"github.com/bitempo/bitempo/store"
)

// Fact is one row of a batch to resolve: the key it references and the valid time
// At it happened at, resolved as known at transaction time Tx. Tx Latest uses the
// newest commit the reader sees; an older Tx resolves the fact "as known then",
// ignoring every correction committed after it (point-in-time correct features,
// reproducing an old load).
type Fact struct {
	Key store.Key
	At  int64
	Tx  int64
}

// MissPolicy says what Resolve does with a fact that no version covers. No
// policy writes: txn.ResolveInferred resolves with MissNull and then creates
// inferred members (late-arriving dimension members) for the unknown keys.
type MissPolicy uint8

// Miss policies.
const (
	// MissError fails the batch with the first miss in input order (a *Miss, so
	// errors.Is tells the reason).
	MissError MissPolicy = iota
	// MissSkip leaves missed facts out of the output.
	MissSkip
	// MissNull gives a missed fact SK 0 and its Reason.
	MissNull
	// MissDefault gives a missed fact ResolveOptions.Default as its SK (the sk of
	// an "unknown" member) and sets Resolution.Default.
	MissDefault
)

// ResolveOptions tune Resolve.
type ResolveOptions struct {
	Miss MissPolicy
	// Default is the surrogate key MissDefault assigns.
	Default uint64
	// Attrs returns each resolved version's attributes with its sk.
	Attrs bool
	// RawAttrs, with Attrs, returns the attributes still encoded
	// (Resolution.RawAttrs, read with store.RawAttrs.Walk) instead of as a map: what a
	// caller that decodes them into its own types (package typed) needs.
	RawAttrs bool
	// Project, with Attrs, names the attributes to decode (as
	// SnapshotOptions.Project): each Resolution's Attrs (or the attributes
	// RawAttrs walks) holds only those of them the version has, and the others
	// are stepped over in the stored record. Empty decodes every attribute.
	Project []string
}

// Resolution is the answer for one fact.
type Resolution struct {
	// Index is the fact's position in the input; the output keeps input order,
	// so Index differs from the position in the output only under MissSkip.
	Index int
	// SK is the surrogate key of the version the fact resolved to, or
	// ResolveOptions.Default or 0 for a miss.
	SK uint64
	// Reason is store.Found when the fact resolved, otherwise why it missed.
	Reason store.MissReason
	// Inferred is set when the version is an inferred member (created by
	// txn.ResolveInferred or txn.Tx.InsertInferred).
	Inferred bool
	// Default is set when SK is ResolveOptions.Default standing in for a miss.
	Default bool
	// Attrs are the version's attributes, with ResolveOptions.Attrs.
	Attrs store.Attrs

	raw store.RawAttrs // encoded attributes, with ResolveOptions.RawAttrs
}

// RawAttrs returns the encoded attributes of the version, with
// ResolveOptions.Attrs and RawAttrs; otherwise the zero RawAttrs.
func (r Resolution) RawAttrs() store.RawAttrs { return r.raw }

// Found reports whether the fact resolved to a version.
func (r Resolution) Found() bool { return r.Reason == store.Found }

// Resolve is a batch as-of join: for each fact, the surrogate key (and with
// opts.Attrs the attributes) of the version of its key in effect at its valid
// time, as known at its transaction time, or a miss handled by opts.Miss. Facts
// may come in any order; the output keeps theirs.
//
// Resolve does not look facts up one at a time. It encodes their keys, splits
// them into disjoint key ranges (one per core, GOMAXPROCS), sorts each range by
// key and descending valid time, and merges it with one forward pass of one
// iterator over the current-state index, stepping through the versions of the
// keys it needs and seeking only past long stretches it does not. Facts with an
// older transaction time are merged the same way, over the current index and
// history: each key's versions alive at that time are read once for all its
// facts. Resolve reads one consistent snapshot and writes nothing.
func Resolve(r store.Reader, table string, facts []Fact, opts ResolveOptions) ([]Resolution, error) {
	out := make([]Resolution, len(facts))
	err := resolveRows(r, table, facts, opts, func(row *ResolvedRow) error {
		return collect(&out[row.Index], row, opts.Attrs, opts.RawAttrs)
	})
	if err != nil {
		return nil, err
	}
	switch opts.Miss {
	case MissSkip:
		out = slices.DeleteFunc(out, func(r Resolution) bool { return !r.Found() })
	case MissDefault:
		for i := range out {
			if !out[i].Found() {
				out[i].SK, out[i].Default = opts.Default, true
			}
		}
	}
	return out, nil
}

// ResolveRows is Resolve delivering each answer to fn as a row view instead of
// collecting Resolutions: with opts.Attrs, the row reads the version's
// attributes straight from the stored record (opts.RawAttrs is implied), by
// the store.AttrRef accessors a store.Row has (row.Int64(ref), row.Text(ref),
// row.Walk(fn); see AttrRow), within opts.Project when it is set. Neither the
// row nor anything in it is allocated per fact: the row is valid only during
// the call. This is the batch join's own output; Resolve is a thin layer over
// it. The batch's working memory (its encoded keys and sorted probes, about 75
// bytes a fact) is kept for the next batch in a sync.Pool rather than
// allocated per call, so a service resolving large batches again and again
// does not start a garbage collection with each; the pool lets it go after two
// collections without a batch.
//
// fn runs on the goroutines that merge the batch (one per core for a batch of
// tens of thousands of facts or more), concurrently, each with its own row, so
// it must be safe for concurrent use: writing to a slice element by
// row.Index is. Facts come in key order within a goroutine, not in input
// order. Misses are handled by opts.Miss: MissSkip leaves them out, MissNull
// and MissDefault deliver them; under MissError fn also sees the facts that
// resolved, and ResolveRows returns the miss first in input order (a *Miss)
// once the batch is done. An error from fn stops the batch and is returned.
func ResolveRows(r store.Reader, table string, facts []Fact, opts ResolveOptions, fn func(row *ResolvedRow) error) error {
	return resolveRows(r, table, facts, opts, func(row *ResolvedRow) error {
		if row.Found() {
			return fn(row)
		}
		switch opts.Miss {
		case MissError, MissSkip:
			return nil
		case MissDefault:
			row.SK, row.Default = opts.Default, true
		}
		return fn(row)
	})
}

// resolveRows resolves facts, delivering every answer, misses included, to fn
// (see resolveBatch), after checking opts.Miss. Under MissError it fails with
// the miss first in input order.
func resolveRows(r store.Reader, table string, facts []Fact, opts ResolveOptions, fn func(row *ResolvedRow) error) error {
	if opts.Miss > MissDefault {
		return fmt.Errorf("bitempo: resolve: unknown miss policy %d", opts.Miss)
	}
	s, t, release, err := open(r, table)
	if err != nil {
		return err
	}
	if opts.Attrs {
		t = project(s, t, opts.Project).WithRawAttrs()
	}
	var mu sync.Mutex
	first, reason := -1, store.Found
	err = resolveBatch(s, t, facts, opts.Attrs, func(row *ResolvedRow) error {
		if opts.Miss == MissError && !row.Found() {
			mu.Lock()
			if first < 0 || row.Index < first {
				first, reason = row.Index, row.Reason
			}
			mu.Unlock()
		}
		return fn(row)
	})
	if err == nil && first >= 0 {
		f := facts[first]
		err = fmt.Errorf("bitempo: resolve fact %d: %w", first, newMiss(t, table, f.Key, AsOf{Valid: f.At, Tx: f.Tx}, reason))
	}
	release()
	return err
}
