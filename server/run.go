package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/wire"
)

// run serves POST /v1/run: one command of the tool (package internal/wire has
// the format). The uploads are spooled to a directory of the request's own
// before the command starts, so a slow client holds no lock of the store; the
// command's file arguments are replaced by stand-ins in that directory (a
// command never opens a path of the server's that the client named), and the
// stand-ins' names are turned back into the client's in what it prints.
func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	body := &deadlineReader{r: r.Body, deadline: deadline{rc.SetReadDeadline, h.opts.ReadTimeout}, ctx: r.Context()}
	defer context.AfterFunc(r.Context(), body.stop)()
	hdr, err := wire.ReadHeader(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	files, _ := cli.FileArgs(hdr.Args, hdr.StdinTTY)
	dir := "" // the request's directory, when its command names files
	if len(files) > 0 || len(hdr.Uploads) > 0 {
		if dir, err = os.MkdirTemp(h.opts.TempDir, "bitempo-run-"); err != nil {
			writeErr(w, err)
			return
		}
		defer os.RemoveAll(dir)
	}
	job, err := h.prepare(dir, files, hdr, body)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", wire.ContentType)
	out := &frames{bw: bufio.NewWriterSize(w, 64<<10), rc: rc, write: deadline{rc.SetWriteDeadline, h.opts.WriteTimeout}}
	stdout := newReplacer(&stream{out, wire.KindStdout}, dir, job.names)
	stderr := newReplacer(&stream{out, wire.KindStderr}, dir, job.names)
	var stdin io.Reader = strings.NewReader("")
	if hdr.Stdin {
		// Stdin may still arrive while output goes out (a question asked).
		_ = rc.EnableFullDuplex()
		stdin = body
	}
	status := cli.RunShared(job.args, cli.Shared{
		DB: h.db, Name: h.opts.Name, ReadOnly: requestAccess(r) != Write, Context: r.Context(),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		StdoutTTY: hdr.StdoutTTY, StderrTTY: hdr.StderrTTY, StdinTTY: hdr.StdinTTY,
	})
	_ = stdout.Close()
	_ = stderr.Close()
	if status == 0 {
		for _, o := range job.outputs {
			if err := sendOutput(out, o.arg, o.path); err != nil {
				fmt.Fprintf(stderr, "bitempo: sending %s: %v\n", o.path, err)
				status = 1
				break
			}
		}
	}
	_ = wire.WriteJSON(out, wire.KindExit, wire.Exit{Status: status})
	_ = out.flush()
}

// job is a command line made ready to run on the server.
type job struct {
	args    []string
	names   map[string]string // stand-in path -> the client's path
	outputs []standIn
}

type standIn struct {
	arg  int
	path string
}

// prepare replaces every file argument of the command line, files, by a
// stand-in in dir, writes the uploads there and prepares the outputs'
// stand-ins to fail as the client's paths would.
func (h *handler) prepare(dir string, files []cli.FileArg, hdr *wire.Header, body io.Reader) (*job, error) {
	j := &job{args: slices.Clone(hdr.Args), names: map[string]string{}}
	inputs := map[int]string{}
	targets := map[int]wire.Target{}
	for _, t := range hdr.Outputs {
		targets[t.Arg] = t
	}
	for k, f := range files {
		if f.Path == "-" && !f.Output {
			continue
		}
		base := filepath.Base(f.Path)
		if base == "." || base == ".." || base == string(filepath.Separator) {
			base = "file"
		}
		sub := filepath.Join(dir, strconv.Itoa(k))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, err
		}
		t := targets[f.Index]
		if f.Output && t.ParentMissing {
			sub = filepath.Join(sub, "missing")
		}
		p := filepath.Join(sub, base)
		j.args[f.Index] = f.Prefix + p
		j.names[p] = f.Path
		// A command may name the file's directory (a temporary file beside it).
		j.names[sub] = filepath.Dir(f.Path)
		if !f.Output {
			inputs[f.Index] = p
			continue
		}
		j.outputs = append(j.outputs, standIn{f.Index, p})
		if err := standInFor(p, t); err != nil {
			return nil, err
		}
	}
	for _, u := range hdr.Uploads {
		if err := receive(inputs, u, body); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// standInFor makes an output's stand-in exist as the client's path does.
func standInFor(p string, t wire.Target) error {
	switch {
	case t.ParentMissing || !t.Exists:
		return nil
	case t.Dir && t.NonEmpty:
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(p, placeholder), nil, 0o600)
	case t.Dir:
		return os.Mkdir(p, 0o700)
	}
	return os.WriteFile(p, nil, 0o600)
}

// placeholder stands for the entries of a client's directory that is not empty.
const placeholder = ".bitempo-placeholder"

// receive writes one upload to its input's stand-in.
func receive(inputs map[int]string, u wire.Upload, body io.Reader) error {
	p, ok := inputs[u.Arg]
	name := filepath.FromSlash(u.Name)
	if !ok || (u.Name != "" && !filepath.IsLocal(name)) || u.Size < 0 {
		return &badRequest{fmt.Sprintf("bitempo: an upload for argument %d names no input file of the command", u.Arg)}
	}
	if u.Name != "" {
		p = filepath.Join(p, name)
	}
	if u.Dir {
		return os.MkdirAll(p, 0o700)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return &badRequest{fmt.Sprintf("bitempo: upload %q: %v", u.Name, err)}
	}
	_, err = io.CopyN(f, body, u.Size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, io.EOF) {
		return &badRequest{"bitempo: the request ended inside an upload"}
	}
	return err
}

// sendOutput sends the file or directory tree a command wrote at p.
func sendOutput(out *frames, arg int, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return nil // the command wrote nothing there
	}
	if !st.IsDir() {
		return sendFile(out, wire.Output{Arg: arg}, p)
	}
	return filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p, q)
		name := filepath.ToSlash(rel)
		switch {
		case name == ".":
			return wire.WriteJSON(out, wire.KindFile, wire.Output{Arg: arg, Dir: true})
		case d.Name() == placeholder:
			return nil
		case d.IsDir():
			return wire.WriteJSON(out, wire.KindFile, wire.Output{Arg: arg, Name: name, Dir: true})
		}
		return sendFile(out, wire.Output{Arg: arg, Name: name}, q)
	})
}

func sendFile(out *frames, o wire.Output, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := wire.WriteJSON(out, wire.KindFile, o); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if werr := wire.WriteFrame(out, wire.KindData, buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// frames writes the answer's frames, flushing standard error at once (a
// question, a progress bar) and standard output in pieces of 32 KiB, and
// giving the client WriteTimeout to take each piece.
type frames struct {
	mu    sync.Mutex
	bw    *bufio.Writer
	rc    *http.ResponseController
	write deadline
	err   error
}

// Write takes whole frames (wire.WriteFrame writes each in two calls, which
// the buffer joins).
func (f *frames) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.write.extend()
	n, err := f.bw.Write(p)
	f.err = err
	return n, err
}

func (f *frames) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.write.extend()
	err := wire.WriteFrame(f.bw, kind, p)
	if err == nil && (kind != wire.KindStdout || f.bw.Buffered() >= 32<<10) {
		err = f.flushLocked()
	}
	f.err = err
	return err
}

func (f *frames) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	return f.flushLocked()
}

func (f *frames) flushLocked() error {
	f.write.extend()
	if err := f.bw.Flush(); err != nil {
		return err
	}
	return f.rc.Flush()
}

// stream is one of the command's output streams.
type stream struct {
	f    *frames
	kind byte
}

func (s *stream) Write(p []byte) (int, error) {
	if err := s.f.frame(s.kind, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// replacer turns the stand-ins' paths back into the client's in a stream,
// holding back a tail that may be the start of one until the next write.
// Every stand-in path starts with the request's directory.
type replacer struct {
	w       io.Writer
	prefix  []byte
	from    [][]byte // longest first
	to      [][]byte
	pending []byte
}

func newReplacer(w io.Writer, dir string, names map[string]string) *replacer {
	r := &replacer{w: w, prefix: []byte(dir)}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		r.from = append(r.from, []byte(k))
		r.to = append(r.to, []byte(names[k]))
	}
	return r
}

func (r *replacer) Write(p []byte) (int, error) {
	if len(r.from) == 0 {
		return r.w.Write(p)
	}
	r.pending = append(r.pending, p...)
	out, rest := r.replace(r.pending, false)
	r.pending = append(r.pending[:0], rest...)
	if len(out) > 0 {
		if _, err := r.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes what was held back.
func (r *replacer) Close() error {
	if len(r.pending) == 0 {
		return nil
	}
	out, _ := r.replace(r.pending, true)
	r.pending = nil
	_, err := r.w.Write(out)
	return err
}

// replace returns s with the stand-ins replaced and, unless final, the tail
// that may still become one.
func (r *replacer) replace(s []byte, final bool) (out, rest []byte) {
	for {
		i := bytes.Index(s, r.prefix)
		if i < 0 {
			keep := 0
			if !final {
				keep = partialSuffix(s, r.prefix)
			}
			return append(out, s[:len(s)-keep]...), s[len(s)-keep:]
		}
		out, s = append(out, s[:i]...), s[i:]
		if !final && r.couldGrow(s) {
			return out, s // a longer stand-in may still follow
		}
		matched := false
		for k, from := range r.from {
			if bytes.HasPrefix(s, from) {
				out, s, matched = append(out, r.to[k]...), s[len(from):], true
				break
			}
		}
		if matched {
			continue
		}
		out, s = append(out, s[:len(r.prefix)]...), s[len(r.prefix):]
	}
}

// couldGrow reports whether s is the start of a stand-in longer than s.
func (r *replacer) couldGrow(s []byte) bool {
	for _, from := range r.from {
		if len(from) > len(s) && bytes.HasPrefix(from, s) {
			return true
		}
	}
	return false
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of p.
func partialSuffix(s, p []byte) int {
	for n := min(len(s), len(p)-1); n > 0; n-- {
		if bytes.HasSuffix(s, p[:n]) {
			return n
		}
	}
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
