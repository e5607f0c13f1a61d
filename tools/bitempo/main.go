// Command bitempo is the command line tool of the bitempo store: it creates
// tables, loads files, answers as-of questions, computes point-in-time features,
// dumps, verifies, backs up and exports a store. `bitempo --help` lists the
// commands; the tool itself lives in internal/cli, so that the build with the etcd
// engine (etcd/cmd/bitempo, its own module) runs the same code. A command whose
// --db is an etcd:// URL runs that build (delegate.go).
package main

import (
	"os"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/toolserve"
)

func main() {
	args := os.Args[1:]
	if status, ran := delegate(args); ran {
		os.Exit(status)
	}
	os.Exit(cli.MainWith(args, cli.Options{Serve: toolserve.Serve}))
}
