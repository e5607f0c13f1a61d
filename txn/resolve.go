package txn

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// ResolveInferred is query.Resolve that creates inferred members for the keys
// its facts reference before the table knows them (late-arriving dimension
// members). It resolves facts on r as query.Resolve does with opts.Miss
// query.MissNull, the only policy it takes: a miss that gets no member keeps
// SK 0 and its Reason. Then, in one transaction on the store r reads (a
// *store.DB, or the DB of a *store.Snapshot), it inserts a placeholder
// (InsertInferred) per key unknown at the newest commit r reads, from the
// earliest valid time the key's facts need, and resolves those facts to it: SK
// the placeholder's, Inferred set, and with opts.Attrs empty Attrs. Real data
// for the key later takes the placeholder over, keeping its sk.
//
// Only facts at the newest commit (Tx Latest, or a Tx at or after the newest
// commit r reads) get a member. Unknown keys of facts with an older Tx or at
// valid time +∞, and facts before the first version, in a gap or after the last
// version of a known key, stay misses: a placeholder there would hide a load
// bug that the gap report shows. A key that another writer created after r's
// snapshot resolves against its new versions, read in the transaction (their
// attributes decoded, projected to opts.Project). When no fact needs a member,
// nothing is written.
func ResolveInferred(r store.Reader, table string, facts []query.Fact, opts query.ResolveOptions) ([]query.Resolution, error) {
	if opts.Miss != query.MissNull {
		return nil, fmt.Errorf("bitempo: resolve with inferred members: miss policy %d, want query.MissNull (the policy of the misses that get no member)", opts.Miss)
	}
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return nil, err
	}
	defer release()
	out, err := query.Resolve(s, table, facts, opts)
	if err != nil {
		return nil, err
	}
	t, err := s.Table(table)
	if err != nil {
		return nil, err
	}
	if err := inferMembers(s.DB(), s.LastTx(), t, facts, out, opts.Attrs, opts.Project); err != nil {
		return nil, err
	}
	return out, nil
}

// inferMembers inserts, in one transaction, an inferred member for each key of
// facts unknown at transaction time last (the newest commit of the snapshot out
// was resolved on), from the earliest valid time its facts need, and resolves
// those facts to it. A key that another writer created since is resolved
// against its new versions.
func inferMembers(db *store.DB, last int64, t *store.Table, facts []query.Fact, out []query.Resolution, attrs bool, project []string) error {
	type member struct {
		key   store.Key
		from  int64
		facts []int
	}
	byTuple := map[string]*member{}
	var order []*member
	for i := range out {
		f := &facts[i]
		// No version can cover +∞ (periods are half-open), so nothing is inferred there.
		if out[i].Reason != store.UnknownKey || (f.Tx != query.Latest && f.Tx < last) || f.At == store.Infinity {
			continue
		}
		tuple, err := t.AppendKey(nil, f.Key)
		if err != nil {
			return err
		}
		m := byTuple[string(tuple)]
		if m == nil {
			m = &member{key: f.Key, from: f.At}
			byTuple[string(tuple)] = m
			order = append(order, m)
		}
		m.from = min(m.from, f.At)
		m.facts = append(m.facts, i)
	}
	if len(order) == 0 {
		return nil
	}
	_, err := Update(db, func(tx *Tx) error {
		for _, m := range order {
			v, err := tx.InsertInferred(t.Name, m.key, m.from)
			if err == nil {
				for _, i := range m.facts {
					out[i] = query.Resolution{Index: i, SK: v.SK, Inferred: true, Attrs: inferredAttrs(attrs)}
				}
				continue
			}
			if !errors.Is(err, ErrKnownKey) {
				return err
			}
			for _, i := range m.facts {
				v, reason, err := tx.Get(t.Name, m.key, facts[i].At)
				if err != nil {
					return err
				}
				out[i] = query.Resolution{Index: i, Reason: reason}
				if reason == store.Found {
					out[i].SK, out[i].Inferred = v.SK, v.Inferred
					if attrs {
						out[i].Attrs = projectAttrs(v.Attrs, project)
					}
				}
			}
		}
		return nil
	})
	return err
}

func inferredAttrs(attrs bool) store.Attrs {
	if attrs {
		return store.Attrs{}
	}
	return nil
}

// projectAttrs returns the attributes of a named in project (all of a when
// project is empty).
func projectAttrs(a store.Attrs, project []string) store.Attrs {
	if len(project) == 0 {
		return a
	}
	out := store.Attrs{}
	for _, name := range project {
		if v, ok := a[name]; ok {
			out[name] = v
		}
	}
	return out
}
