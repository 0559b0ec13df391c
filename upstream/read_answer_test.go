package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// failingReader returns its bytes, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestReadAnswer: the whole answer whatever its Content-Length says (the
// right length, none, too short, too long), in one buffer when the length
// is right, and a read error passed on.
func TestReadAnswer(t *testing.T) {
	answer := strings.Repeat(`{"choices":[]}`, 300)
	for _, tc := range []struct {
		name   string
		length int64
	}{
		{"exact", int64(len(answer))},
		{"unknown", -1},
		{"short", 10},
		{"long", int64(len(answer)) * 3},
		{"empty", 0},
	} {
		body := answer
		if tc.name == "empty" {
			body = ""
		}
		resp := &http.Response{ContentLength: tc.length, Body: io.NopCloser(strings.NewReader(body))}
		got, err := ReadAnswer(resp)
		if err != nil || string(got) != body {
			t.Fatalf("%s: got %d bytes, %v; want %d", tc.name, len(got), err, len(body))
		}
		if tc.name == "exact" {
			resp.Body = io.NopCloser(strings.NewReader(body))
			if n := testing.AllocsPerRun(20, func() {
				resp.Body = io.NopCloser(strings.NewReader(body))
				if _, err := ReadAnswer(resp); err != nil {
					t.Fatal(err)
				}
			}); n > 3 {
				t.Errorf("exact length: %.0f allocations, want the buffer's one (and the test's readers)", n)
			}
		}
	}
	// A length the upstream claims is not taken on its word past 64 KiB.
	resp := &http.Response{ContentLength: 1 << 30, Body: io.NopCloser(strings.NewReader("{}"))}
	if got, err := ReadAnswer(resp); err != nil || string(got) != "{}" || cap(got) > 64<<10+1 {
		t.Fatalf("a claimed gigabyte: %q (cap %d), %v", got, cap(got), err)
	}
	boom := errors.New("connection reset")
	resp = &http.Response{ContentLength: -1, Body: io.NopCloser(&failingReader{r: bytes.NewReader([]byte("partial")), err: boom})}
	if _, err := ReadAnswer(resp); !errors.Is(err, boom) {
		t.Fatalf("read error: got %v", err)
	}
}
