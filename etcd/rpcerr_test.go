package etcd

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bitempo/bitempo/store"
)

// TestTransientErrorsAreUnavailable: the answers of a cluster that is moving
// its leadership or has none (a proposal dropped, a member that is not the
// leader, an overloaded member) wrap store.ErrUnavailable, the error a caller
// retries, and not store.ErrIO.
func TestTransientErrorsAreUnavailable(t *testing.T) {
	e := newEngine(nil, false, Config{Prefix: "/p"}.withDefaults())
	for _, err := range []error{
		status.Error(codes.Unknown, raft.ErrProposalDropped.Error()),
		rpctypes.Error(rpctypes.ErrGRPCNotLeader),
		rpctypes.Error(rpctypes.ErrGRPCLeaderChanged),
		rpctypes.Error(rpctypes.ErrGRPCRequestTooManyRequests),
		rpctypes.Error(rpctypes.ErrGRPCNoLeader),
	} {
		if got := e.rpcErr("commit", err); !errors.Is(got, store.ErrUnavailable) {
			t.Errorf("%v: %v, want an error wrapping store.ErrUnavailable", err, got)
		}
	}
	if got := e.rpcErr("commit", status.Error(codes.Unknown, "something else")); !errors.Is(got, store.ErrIO) {
		t.Errorf("an unknown error: %v, want store.ErrIO", got)
	}
}
