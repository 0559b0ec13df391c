package ledger

import (
	"os"
	"runtime"
	"sync"
)

// netYield steps the in-process (SQLite) writer aside between the
// statements of a batch so that requests whose network I/O became ready
// meanwhile run first.
//
// runtime.Gosched is not enough: it puts the writer on the global run
// queue, and Go's scheduler takes from the run queues before it polls the
// network. With one processor (a pinned gateway, a one-CPU container) a
// request whose client or upstream answered during a batch waited for the
// whole batch, ~2 ms per 256 records: the yardstick read it as the SQLite
// gateway's concurrency-1 p99.9 and its time-to-first-token tail. A timer
// would reach the network poll too, but on an idle processor a sleep lasts
// at least a millisecond (epoll's resolution), a batch's twenty yields
// twenty milliseconds. Instead the writer parks reading a pipe that a
// helper goroutine then writes: nothing is runnable once the helper parks
// again, so the scheduler polls the network, and the writer resumes after
// whatever it found (a few microseconds a yield).
type netYield struct {
	r, w   *os.File
	kick   chan struct{}
	mu     sync.Mutex // one yield at a time; closed under it
	closed bool
	done   chan struct{}
}

// newNetYield starts the helper; close stops it. A machine that refuses
// a pipe gets nil, whose yield is runtime.Gosched's poorer one.
func newNetYield() *netYield {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	y := &netYield{r: r, w: w, kick: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(y.done)
		one := []byte{0}
		for range y.kick {
			if _, err := y.w.Write(one); err != nil {
				return
			}
		}
	}()
	// One round trip now: the first yield then finds the helper waiting
	// on its channel, and parks on the pipe before the helper writes.
	y.kick <- struct{}{}
	var b [1]byte
	if _, err := y.r.Read(b[:]); err != nil {
		y.closeLocked()
		return nil
	}
	return y
}

// yield parks the caller until the scheduler has run what was runnable
// and polled the network once. With more than one processor it only gives
// way to what is already runnable: another processor that runs out of
// work polls the network itself, and the pipe's round trip (~10 µs, two
// threads waking each other) would cost the writer a tenth of its batch
// for nothing. A second caller meanwhile, and any caller after close,
// does the same.
func (y *netYield) yield() {
	if y == nil || runtime.GOMAXPROCS(0) > 1 || !y.mu.TryLock() {
		runtime.Gosched()
		return
	}
	defer y.mu.Unlock()
	if y.closed {
		runtime.Gosched()
		return
	}
	select {
	case y.kick <- struct{}{}:
	case <-y.done: // the helper's write failed
		return
	}
	var b [1]byte
	_, _ = y.r.Read(b[:])
	// The poll usually hands the processor back to the writer first and
	// queues what else it found: step aside once more so that runs now,
	// not after the next statement.
	runtime.Gosched()
}

func (y *netYield) close() {
	if y == nil {
		return
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	y.closeLocked()
}

func (y *netYield) closeLocked() {
	if y.closed {
		return
	}
	y.closed = true
	close(y.kick)
	<-y.done
	_ = y.w.Close()
	_ = y.r.Close()
}
