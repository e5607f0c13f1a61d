package etcd

import "github.com/bitempo/bitempo/engine"

// ViewAtRevision returns a view of e at revision rev, for tests of reads at a
// revision the cluster has not reached.
func ViewAtRevision(e *Engine, rev int64) engine.View { return &view{e: e, rev: rev} }

// Revision returns the revision a view reads at.
func Revision(v engine.View) int64 { return v.(*view).rev }
