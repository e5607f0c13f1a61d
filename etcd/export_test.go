package etcd

import (
	"time"

	"github.com/bitempo/bitempo/engine"
)

// ViewAtRevision returns a view of e at revision rev, for tests of reads at a
// revision the cluster has not reached.
func ViewAtRevision(e *Engine, rev int64) engine.View { return &view{e: e, rev: rev} }

// Revision returns the revision a view reads at.
func Revision(v engine.View) int64 { return v.(*view).rev }

// BreakViews makes every engine's views outside the write lock reuse the
// revision of a view taken less than d ago (0: the engine as built), for the
// test that the linearizability check catches stale reads.
func BreakViews(d time.Duration) { testHookStaleViews = d }
