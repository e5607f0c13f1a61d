package server

import (
	"context"
	"io"
	"time"
)

// deadline moves a connection's read or write deadline timeout past now
// before each piece of a stream, so that a slow client gets timeout per piece,
// not for the whole stream. A zero timeout sets none.
type deadline struct {
	set     func(time.Time) error // an http.ResponseController's SetReadDeadline or SetWriteDeadline
	timeout time.Duration
}

func (d deadline) extend() {
	if d.timeout > 0 {
		_ = d.set(time.Now().Add(d.timeout))
	}
}

// deadlineWriter gives the client WriteTimeout to take each piece of a stream.
type deadlineWriter struct {
	w io.Writer
	deadline
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.extend()
	return d.w.Write(p)
}

// deadlineReader gives the client ReadTimeout to send each piece of the body,
// and stops reading it once ctx ends (a cancelled command stops waiting for
// its stdin): stop, called when ctx ends, and Read, after it extends the
// deadline, both set a deadline in the past once ctx has ended.
type deadlineReader struct {
	r io.Reader
	deadline
	ctx context.Context
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	d.extend()
	if d.timeout > 0 && d.ctx.Err() != nil {
		d.stop()
	}
	return d.r.Read(p)
}

func (d *deadlineReader) stop() { _ = d.set(time.Now()) }
