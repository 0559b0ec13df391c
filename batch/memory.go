package batch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/apierror"
)

// Memory is the gateway's bound on the request-body bytes it holds at once
// (max_body_memory), which a batch's input counts against too: without
// it, N concurrent 100 MB uploads hold N × 100 MB and more.
type Memory interface {
	// Acquire takes n bytes, waiting a short while for room; false: none.
	Acquire(ctx context.Context, n int64) bool
	// Release gives n bytes back.
	Release(n int64)
	// Max is the bound: an input whose working set passes it never fits.
	Max() int64
}

// workingSet is how many times its size a batch input is held at its
// peak: the body read whole (with the buffers it outgrew, about as much
// again), the requests decoded from it, and the rows written of them.
const workingSet = 4

// MemoryFor is the bound (Memory.Max) that lets a batch input of maxBytes
// be read and stored: its working set.
func MemoryFor(maxBytes int64) int64 { return workingSet * maxBytes }

// downloadCopies is how many times its size a file sent back is held:
// the store's copy and the driver's buffer it was read from.
const downloadCopies = 2

// streamChunk is the characters of a file sent back per read of the
// store, when it reads in pieces: at most 1 MiB of UTF-8.
const streamChunk = 256 << 10

// holdStep is the least taken from the bound at a time, so a body read
// in small pieces does not take the bound's lock per piece.
const holdStep = 1 << 20

// hold is what one batch request holds of the bound; a hold without a
// Memory bounds nothing.
type hold struct {
	m       Memory
	ctx     context.Context
	held    int64
	refused *apierror.Error
}

func (s *Service) newHold(ctx context.Context) *hold {
	return &hold{m: s.o.Memory, ctx: ctx}
}

// cover makes the hold cover the working set of input bytes of input,
// or says why it cannot (also kept in refused).
func (h *hold) cover(input int64) *apierror.Error {
	if h.m == nil || h.refused != nil {
		return h.refused
	}
	need := input * workingSet
	if need <= h.held {
		return nil
	}
	grab := max(need-h.held, holdStep)
	if bound := h.m.Max(); h.held+grab > bound {
		if need > bound {
			h.refused = tooLargeForMemory(input, bound)
			return h.refused
		}
		grab = need - h.held
	}
	if !h.m.Acquire(h.ctx, grab) {
		h.refused = memoryFull()
		return h.refused
	}
	h.held += grab
	return nil
}

// take makes the hold cover n bytes a download holds, or says why it
// cannot. A file past the whole bound (a large batch's results, which
// max_bytes does not bound) takes the whole bound, so it is sent alone
// rather than refused.
func (h *hold) take(n int64) *apierror.Error {
	if h.m == nil {
		return nil
	}
	n = min(n, h.m.Max())
	if n <= h.held {
		return nil
	}
	if !h.m.Acquire(h.ctx, n-h.held) {
		return memoryFull()
	}
	h.held = n
	return nil
}

func memoryFull() *apierror.Error {
	return &apierror.Error{Status: http.StatusServiceUnavailable, Code: "body_memory_full", RetryAfter: "1",
		Message: "the gateway holds its limit of batch bytes at once (half of max_body_memory); retry shortly"}
}

// release gives back everything the hold took.
func (h *hold) release() {
	if h.m != nil && h.held > 0 {
		h.m.Release(h.held)
		h.held = 0
	}
}

// body is r's body, counted against the hold as it is read: before each
// read, the bytes read so far and the buffer being read into.
func (h *hold) body(r *http.Request) io.ReadCloser {
	if h.m == nil {
		return r.Body
	}
	return struct {
		io.Reader
		io.Closer
	}{&heldReader{r: r.Body, h: h}, r.Body}
}

var errHeld = errors.New("batch input past the gateway's body memory")

type heldReader struct {
	r io.Reader
	h *hold
	n int64
}

func (r *heldReader) Read(p []byte) (int, error) {
	if e := r.h.cover(r.n + int64(len(p))); e != nil {
		return 0, errHeld
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	return n, err
}

func tooLargeForMemory(input, bound int64) *apierror.Error {
	return &apierror.Error{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large",
		Message: "a batch input of " + strconv.FormatInt(input, 10) + "+ bytes is held " + strconv.Itoa(workingSet) +
			" times over while it is read and stored, past the " + strconv.FormatInt(bound, 10) +
			" bytes batches may hold at once (half the gateway's max_body_memory); split it into several batches, or raise max_body_memory"}
}
