package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bitempo/bitempo/internal/wire"
)

// This file is the tool's side of a store shared through a server: with --db
// http://HOST:PORT (or https://), the command line, the files it names and,
// when it reads it, standard input go to the server (bitempo serve, or a
// program mounting server.Handler), which runs the command on its open store
// and streams back what the command prints, the files it writes and its exit
// status (package internal/wire holds the format). What the tool prints is
// then what the command prints on a local store.

// Environment variables of the client.
const (
	// TokenEnv holds the bearer token sent to a server that asks for one.
	TokenEnv = "BITEMPO_TOKEN"
	// CAFileEnv names a PEM file of the certificates an https:// server's
	// certificate may chain to, instead of the system's.
	CAFileEnv = "BITEMPO_CA_FILE"
)

// remoteDB returns the --db of args when it names a server, else "".
func remoteDB(args []string) string {
	db, _ := splitDB(args)
	if strings.HasPrefix(db, "http://") || strings.HasPrefix(db, "https://") {
		return db
	}
	return ""
}

// splitDB returns the value of --db in args and args without it.
func splitDB(args []string) (db string, rest []string) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return db, append(rest, args[i:]...)
		case a == "--db" && i+1 < len(args):
			db = args[i+1]
			i++
		case strings.HasPrefix(a, "--db="):
			db = strings.TrimPrefix(a, "--db=")
		default:
			rest = append(rest, a)
		}
	}
	return db, rest
}

// runRemote runs args on the server at url and returns the command's exit status.
func (a *app) runRemote(url string, args []string) int {
	_, args = splitDB(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status, err := a.remote(ctx, url, args)
	if err == nil {
		return status
	}
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "bitempo: interrupted; the server at %s stops the command (a load there rolls back unless it had committed)\n", url)
		return exitSignal
	}
	fmt.Fprintf(a.stderr, "bitempo: %s\n", strings.TrimPrefix(err.Error(), "bitempo: "))
	return exitFailure
}

// remote sends the request and plays the answer back.
func (a *app) remote(ctx context.Context, url string, args []string) (int, error) {
	client, err := remoteClient()
	if err != nil {
		return 0, err
	}
	// The command is the client's one request: its connection closes with it,
	// also when the answer was read to its end (a kept-alive connection would
	// otherwise stay open, idle, in a process that runs several commands).
	defer client.CloseIdleConnections()
	files, stdin := FileArgs(args, a.stdinTTY)
	hdr := &wire.Header{Version: wire.Version, Args: args, Stdin: stdin,
		StdoutTTY: a.stdoutTTY, StderrTTY: a.stderrTTY, StdinTTY: a.stdinTTY}
	outputs := map[int]string{}
	for _, f := range files {
		if f.Output {
			outputs[f.Index] = f.Path
			hdr.Outputs = append(hdr.Outputs, target(f))
		} else if f.Path != "-" {
			hdr.Uploads = append(hdr.Uploads, uploads(f)...)
		}
	}
	body, pw := io.Pipe()
	go func() { pw.CloseWithError(a.sendRequest(pw, hdr, files)) }()
	// An interrupt ends the request at once, even while stdin, still open,
	// has nothing to send.
	defer context.AfterFunc(ctx, func() { _ = body.CloseWithError(ctx.Err()) })()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+wire.Path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", wire.ContentType)
	if tok := os.Getenv(TokenEnv); tok != "" {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("server %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, remoteError(url, resp)
	}
	r := &remoteOutputs{paths: outputs}
	defer r.abandon()
	status, err := r.play(a, wire.NewReader(resp.Body))
	if err != nil {
		return 0, fmt.Errorf("the answer of the server %s was cut off: %w (a load there committed whole or not at all; bitempo changes NAME --since T tells which)", url, err)
	}
	return status, nil
}

// remoteClient is the HTTP client of --db URLs, trusting $BITEMPO_CA_FILE when set.
func remoteClient() (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if path := os.Getenv(CAFileEnv); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CAFileEnv, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", CAFileEnv, path)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t}, nil
}

// remoteError turns a refused request into the error printed for it.
func remoteError(url string, resp *http.Response) error {
	var e struct {
		Error string `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(b))
	}
	return fmt.Errorf("server %s refused the command (%s): %s", url, resp.Status, strings.TrimPrefix(e.Error, "bitempo: "))
}

// target describes an output path as it stands on this machine.
func target(f FileArg) wire.Target {
	t := wire.Target{Arg: f.Index}
	if _, err := os.Stat(filepath.Dir(f.Path)); err != nil {
		t.ParentMissing = true
	}
	if st, err := os.Stat(f.Path); err == nil {
		t.Exists, t.Dir = true, st.IsDir()
		if t.Dir {
			entries, _ := os.ReadDir(f.Path)
			t.NonEmpty = len(entries) > 0
		}
	}
	return t
}

// uploads lists the file, or the directory's entries, an input argument
// names. One that cannot be read is not sent: the command on the server then
// fails to open it, naming it as it would here.
func uploads(f FileArg) []wire.Upload {
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		return []wire.Upload{{Arg: f.Index, Size: st.Size()}}
	}
	var ups []wire.Upload
	_ = filepath.WalkDir(f.Path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(f.Path, p)
		name := filepath.ToSlash(rel)
		if name == "." {
			name = ""
		}
		if d.IsDir() {
			ups = append(ups, wire.Upload{Arg: f.Index, Name: name, Dir: true})
		} else if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			ups = append(ups, wire.Upload{Arg: f.Index, Name: name, Size: info.Size()})
		}
		return nil
	})
	return ups
}

// sendRequest writes the request body: the header, the uploads, then stdin.
func (a *app) sendRequest(w io.Writer, hdr *wire.Header, files []FileArg) error {
	if err := wire.WriteHeader(w, hdr); err != nil {
		return err
	}
	paths := map[int]string{}
	for _, f := range files {
		paths[f.Index] = f.Path
	}
	for _, u := range hdr.Uploads {
		if u.Dir {
			continue
		}
		if err := sendFile(w, filepath.Join(paths[u.Arg], filepath.FromSlash(u.Name)), u.Size); err != nil {
			return err
		}
	}
	if hdr.Stdin {
		_, err := io.Copy(w, a.stdin)
		return err
	}
	return nil
}

// sendFile copies exactly size bytes of the file at path.
func sendFile(w io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(w, f, size); err != nil {
		return fmt.Errorf("%s changed while it was sent: %w", path, err)
	}
	return nil
}

// remoteOutputs writes the files a command on the server wrote to the paths
// its command line named here. Each file is written under a temporary name
// and renamed into place once whole.
type remoteOutputs struct {
	paths map[int]string
	cur   *os.File
	final string
}

// play copies the answer's frames to the streams and files until the exit status.
func (r *remoteOutputs) play(a *app, fr *wire.Reader) (int, error) {
	for {
		kind, p, err := fr.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch kind {
		case wire.KindStdout:
			if _, err := a.stdout.Write(p); err != nil {
				return 0, err
			}
		case wire.KindStderr:
			if _, err := a.stderr.Write(p); err != nil {
				return 0, err
			}
		case wire.KindFile:
			if err := r.start(p); err != nil {
				return 0, err
			}
		case wire.KindData:
			if r.cur == nil {
				return 0, fmt.Errorf("%w: data outside a file", wire.ErrFrame)
			}
			if _, err := r.cur.Write(p); err != nil {
				return 0, err
			}
		case wire.KindExit:
			var e wire.Exit
			if err := json.Unmarshal(p, &e); err != nil {
				return 0, fmt.Errorf("%w: %v", wire.ErrFrame, err)
			}
			return e.Status, r.finish()
		default:
			return 0, fmt.Errorf("%w: frame kind %q", wire.ErrFrame, kind)
		}
	}
}

// start finishes the file being written and starts the one p describes.
func (r *remoteOutputs) start(p []byte) error {
	if err := r.finish(); err != nil {
		return err
	}
	var o wire.Output
	if err := json.Unmarshal(p, &o); err != nil {
		return fmt.Errorf("%w: %v", wire.ErrFrame, err)
	}
	path, ok := r.paths[o.Arg]
	name := filepath.FromSlash(o.Name)
	if !ok || (o.Name != "" && !filepath.IsLocal(name)) {
		return fmt.Errorf("%w: the server sent a file the command line does not name", wire.ErrFrame)
	}
	if o.Name != "" {
		path = filepath.Join(path, name)
	}
	if o.Dir {
		return os.MkdirAll(path, 0o755)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".remote-*")
	if err != nil {
		return err
	}
	r.cur, r.final = f, path
	return nil
}

// finish closes the file being written and renames it into place.
func (r *remoteOutputs) finish() error {
	if r.cur == nil {
		return nil
	}
	f := r.cur
	r.cur = nil
	err := f.Chmod(0o644) // CreateTemp's 0600 is for the unfinished file, as locally
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), r.final)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// abandon removes a file left half-written by a cut-off answer.
func (r *remoteOutputs) abandon() {
	if r.cur != nil {
		_ = r.cur.Close()
		_ = os.Remove(r.cur.Name())
		r.cur = nil
	}
}
