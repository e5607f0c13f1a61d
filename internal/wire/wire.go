// Package wire is the format of one command of the bitempo tool run through a
// server: the request the tool sends (its command line, the files it names and
// its standard input) and the framed stream the server answers with (standard
// output, standard error, the files the command wrote and its exit status).
//
// The request body is a Header (a 4-byte big-endian length and its JSON), the
// bytes of each Upload in the Header's order, then, when Header.Stdin is set,
// the tool's standard input until the end of the body.
//
// The response body is a sequence of frames, each a kind byte, a 4-byte
// big-endian length and that many bytes of payload:
//
//  1. KindStdout and KindStderr carry the command's output as it is written;
//  2. KindFile starts a file or directory the command wrote (a JSON Output),
//     whose bytes follow in KindData frames;
//  3. KindExit ends the stream with the exit status (a JSON Exit). A stream that
//     ends without it was cut off: the command's own atomicity (a load commits
//     whole or not at all) is all the client may assume.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Path is the route of the command endpoint, relative to the server's root.
const Path = "/v1/run"

// ContentType is the media type of both bodies.
const ContentType = "application/x-bitempo-run"

// Version is the format version a Header carries; a server refuses others.
const Version = 1

// Frame kinds of the response stream.
const (
	KindStdout byte = 'o'
	KindStderr byte = 'e'
	KindFile   byte = 'f'
	KindData   byte = 'd'
	KindExit   byte = 'x'
)

// MaxFrame bounds a frame's payload: writers split larger writes and readers
// refuse larger frames.
const MaxFrame = 1 << 20

// maxHeader bounds the request's header.
const maxHeader = 1 << 20

// ErrFrame is returned for a stream that is not in this format.
var ErrFrame = errors.New("bitempo: malformed command stream")

// Header opens a request: the command line and what the client sends with it.
type Header struct {
	Version int      `json:"version"`
	Args    []string `json:"args"` // the command line without the program name and --db
	// StdoutTTY, StderrTTY and StdinTTY say whether the client's streams are
	// terminals: output formats, the progress bar and questions depend on it.
	StdoutTTY bool `json:"stdout_tty,omitempty"`
	StderrTTY bool `json:"stderr_tty,omitempty"`
	StdinTTY  bool `json:"stdin_tty,omitempty"`
	// Stdin says that the client's standard input follows the uploads.
	Stdin   bool     `json:"stdin,omitempty"`
	Uploads []Upload `json:"uploads,omitempty"`
	Outputs []Target `json:"outputs,omitempty"`
}

// Upload is one input file (or a directory's entry) the command line names.
type Upload struct {
	Arg  int    `json:"arg"`            // the index in Args of the argument naming it
	Name string `json:"name,omitempty"` // slash path inside the argument's directory; "" for the argument itself
	Dir  bool   `json:"dir,omitempty"`  // a directory: no bytes follow
	Size int64  `json:"size"`
}

// Target describes, on the client's side, a path the command will write, so
// that the server's stand-in for it fails the way the client's would.
type Target struct {
	Arg           int  `json:"arg"`
	Exists        bool `json:"exists,omitempty"`
	Dir           bool `json:"dir,omitempty"`
	NonEmpty      bool `json:"non_empty,omitempty"`
	ParentMissing bool `json:"parent_missing,omitempty"`
}

// Output starts a file the command wrote, in a KindFile frame.
type Output struct {
	Arg  int    `json:"arg"`
	Name string `json:"name,omitempty"` // slash path inside the argument's directory
	Dir  bool   `json:"dir,omitempty"`
}

// Exit is the payload of the KindExit frame.
type Exit struct {
	Status int `json:"status"`
}

// WriteHeader writes h, length first.
func WriteHeader(w io.Writer, h *Header) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadHeader reads a Header written by WriteHeader.
func ReadHeader(r io.Reader) (*Header, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFrame, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxHeader {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrFrame, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFrame, err)
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFrame, err)
	}
	if h.Version != Version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrFrame, h.Version, Version)
	}
	return &h, nil
}

// WriteFrame writes one frame of kind k; payloads over MaxFrame are split.
func WriteFrame(w io.Writer, k byte, p []byte) error {
	for {
		n := min(len(p), MaxFrame)
		var hdr [5]byte
		hdr[0] = k
		binary.BigEndian.PutUint32(hdr[1:], uint32(n))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

// WriteJSON writes a frame of kind k holding v as JSON.
func WriteJSON(w io.Writer, k byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFrame(w, k, b)
}

// Reader reads frames.
type Reader struct {
	r   io.Reader
	buf []byte
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next returns the next frame's kind and payload, valid until the next call;
// io.EOF at a clean end between frames.
func (fr *Reader) Next() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(fr.r, hdr[:1]); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(fr.r, hdr[1:]); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes", ErrFrame, n)
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	return hdr[0], p, nil
}
