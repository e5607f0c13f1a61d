package etcdtest

import (
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
)

// TestMemberOnATakenPortIsRecognized starts a member on a client port another
// listener holds: the error must be one Start retries on fresh ports.
func TestMemberOnATakenPortIsRecognized(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	peer, err := freeURL()
	if err != nil {
		t.Fatal(err)
	}
	m := &Member{Name: "m0", ClientURL: url.URL{Scheme: "http", Host: held.Addr().String()}, PeerURL: peer}
	c := &Cluster{dir: t.TempDir(), members: []*Member{m}, initial: "m0=" + peer.String()}
	err = c.start(0, embed.ClusterStateFlagNew)
	if err == nil {
		c.Close()
		t.Fatal("a member started on a port another listener holds")
	}
	if !portTaken(err) {
		t.Fatalf("the error of a member on a taken port is not recognized as one: %v", err)
	}
}

// TestStartGivesAClusterWithALeader starts a 3-member cluster and checks that
// it has a leader and that Close removes its data.
func TestStartGivesAClusterWithALeader(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	c, err := Start(dir, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Leader() < 0 {
		c.Close()
		t.Fatal("no member knows of a leader")
	}
	c.Close()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the cluster's data is still there after Close: %v", err)
	}
}
