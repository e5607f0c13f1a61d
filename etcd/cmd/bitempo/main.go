// Command bitempo is the bitempo tool built with the etcd engine: every command
// of the plain tool (github.com/bitempo/bitempo/tools/bitempo), whose --db also
// takes
//
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?max-txn-ops=N&max-request-bytes=N&timeout=DURATION]
//
// for a store under key prefix /PREFIX on the etcd cluster whose members'
// client URLs are the HOST:PORTs. max-txn-ops and max-request-bytes are the
// cluster's flags of those names (default etcd's, 128 and 1572864); timeout
// bounds each request to the cluster (default 10s). It lives in the etcd
// module so that users of the plain tool never download etcd and gRPC:
//
//	cd etcd && go run ./cmd/bitempo --db etcd://127.0.0.1:2379/demo tables
package main

import (
	"os"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/toolserve"
)

func main() {
	os.Exit(cli.MainWith(os.Args[1:], cli.Options{Engines: map[string]cli.Opener{"etcd": etcd.OpenURL}, Serve: toolserve.Serve}))
}
