package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestFramesRoundTrip writes a header and frames, one over MaxFrame, and
// reads them back; a truncated stream or an oversized frame is ErrFrame.
func TestFramesRoundTrip(t *testing.T) {
	var b bytes.Buffer
	h := &Header{Version: Version, Args: []string{"get", "t", "k"}, Stdin: true, Uploads: []Upload{{Arg: 1, Size: 3}}}
	if err := WriteHeader(&b, h); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHeader(&b)
	if err != nil || strings.Join(got.Args, " ") != "get t k" || !got.Stdin || got.Uploads[0].Size != 3 {
		t.Fatalf("header: %+v %v", got, err)
	}
	big := bytes.Repeat([]byte("x"), MaxFrame+10)
	_ = WriteFrame(&b, KindStdout, big)
	_ = WriteJSON(&b, KindExit, Exit{Status: 2})
	r := NewReader(&b)
	var out []byte
	for {
		kind, p, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if kind == KindExit {
			if string(p) != `{"status":2}` {
				t.Fatalf("exit frame %q", p)
			}
			break
		}
		out = append(out, p...)
	}
	if !bytes.Equal(out, big) {
		t.Fatalf("stdout of %d bytes came back as %d", len(big), len(out))
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	for name, s := range map[string]string{"truncated": "o\x00\x00\x00\x05ab", "oversized": "o\x7f\x00\x00\x00"} {
		if _, _, err := NewReader(strings.NewReader(s)).Next(); !errors.Is(err, ErrFrame) {
			t.Errorf("%s frame: %v", name, err)
		}
	}
	var old bytes.Buffer
	_ = WriteHeader(&old, &Header{Version: Version + 1})
	if _, err := ReadHeader(&old); !errors.Is(err, ErrFrame) {
		t.Errorf("another version: %v", err)
	}
}
