package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bitempo/bitempo/store"
)

// This file runs the tool's commands on a store that another part of the
// process holds open: a server (package server) runs each command line a
// client sends on its one open store, through the same command tree, so that
// the client prints exactly what the command prints on a local store.

// Shared is what RunShared runs a command line with.
type Shared struct {
	// DB is the open store. Each command takes a share of it (store.DB.Share)
	// and closes only that: the store stays open.
	DB *store.DB
	// Name is what messages call the store, as --db names it locally (a
	// server's --db directory).
	Name string
	// ReadOnly refuses every command that writes (a read-only token), with
	// store.ErrReadOnly, before it reads its input.
	ReadOnly bool
	// Context ends with the request: a load then rolls back.
	Context                        context.Context
	Stdin                          io.Reader
	Stdout, Stderr                 io.Writer
	StdoutTTY, StderrTTY, StdinTTY bool
}

// localOnly are the commands that need the store's directory to themselves
// (demo rebuilds it, recover reopens it, serve opens it) and so do not run
// through a server.
var localOnly = map[string]bool{"demo": true, "recover": true, "serve": true}

// RunShared runs one command line (without the program name) on s.DB and
// returns its exit status. The command line must not carry --db: the store is
// s.DB. --wait has no effect (a write waits for the store's writer lock), and
// --read-only makes every write fail at once, as s.ReadOnly does.
func RunShared(args []string, s Shared) int {
	a := &app{
		shared: s.DB, sharedName: s.Name, sharedReadOnly: s.ReadOnly, ctx: s.Context,
		stdin: s.Stdin, stdout: s.Stdout, stderr: s.Stderr,
		stdoutTTY: s.StdoutTTY, stderrTTY: s.StderrTTY, stdinTTY: s.StdinTTY,
	}
	if a.stdin == nil {
		a.stdin = strings.NewReader("")
	}
	if a.ctx == nil {
		a.ctx = context.Background()
	}
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if arg == "--db" || strings.HasPrefix(arg, "--db=") {
			fmt.Fprintln(a.stderr, "bitempo: --db names the server's store; leave it out of a command run through a server")
			return exitUsage
		}
	}
	name := findCommand(args)
	if localOnly[name] {
		fmt.Fprintf(a.stderr, "bitempo: %s runs on a local store only, not through a server\n", name)
		return exitFailure
	}
	a.only = name
	return a.run(args)
}

// openShared hands a command its share of the server's store; a command that
// writes is refused when the request may only read.
func (a *app) openShared(readOnly bool) (*store.DB, error) {
	switch {
	case readOnly:
	case a.readOnly:
		return nil, &failure{store.ErrReadOnly} // as --read-only says it on a local store
	case a.sharedReadOnly:
		return nil, &failure{fmt.Errorf("%w: the server lets this client only read (a read token)", store.ErrReadOnly)}
	}
	return a.shared.Share(), nil
}

// interruptContext is the context a load stops on and rolls back: SIGINT or
// SIGTERM on its own; on a server, the end of its request (a client gone, or
// the server's shutdown timeout), never the server's signal, on which the
// server lets it finish. A load on a server never ends the process: a load on
// its own exits at once when a signal arrives while it reads stdin, and one
// that has committed exits with its own status whenever a signal arrives.
func (a *app) interruptContext() (context.Context, context.CancelFunc) {
	if a.shared != nil {
		return context.WithCancel(a.ctx)
	}
	// Not signal.NotifyContext: its stop restores the default action, and an
	// interrupt between a commit and the process's exit would then kill a
	// load that succeeded (exit by signal after "loaded ..."). The channel
	// stays registered for the rest of the process, so such a late signal is
	// caught and dropped and the command exits with its own status.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
