package integration

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports for the processes the tests start, drawn so that no two users,
// in this process or another, are ever handed the same one.
//
// The gateway gets listening sockets, not numbers: listenLoopback binds
// 127.0.0.1:0 and the test keeps the socket open while it hands a
// duplicate to caddy (`bind fd/3`, `admin fd/4`), so the port is never
// free between being chosen and being served.
//
// Processes that can only be told a number (the OpenID provider and the
// MCP reference server under node, Jaeger, `caddy gateway --listen`) get
// one from freePort, which draws below the kernel's ephemeral range. The
// kernel hands ports of that range to every `:0` listener and every
// outgoing connection of every process, which is how a port picked by
// listening on :0 and closing could be taken before the child bound it;
// below the range, only someone naming the port can take it. Within the
// process no port is handed out twice, each process starts at a random
// point, and a port is checked free (bound and released) before use.

// listenLoopback is a listening socket on a loopback port the kernel
// chose, closed when the test ends.
func listenLoopback(t *testing.T) *net.TCPListener {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// listenerFile is a duplicate of l's socket for a child's ExtraFiles.
func listenerFile(t *testing.T, l *net.TCPListener) *os.File {
	t.Helper()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func portOf(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// portAllocator hands out ports in [lo, hi), each at most once.
type portAllocator struct {
	mu     sync.Mutex
	lo, hi int
	next   int
	used   int
}

// processPorts is shared by every test of the process: "never the same
// port twice" holds across tests only if they draw from one allocator.
var processPorts = sync.OnceValue(func() *portAllocator {
	lo, hi := 10000, ephemeralLow()
	if hi-lo < 1000 { // an unusually wide ephemeral range: take what is left below it
		lo = 1024
	}
	return &portAllocator{lo: lo, hi: hi, next: lo + rand.IntN(hi-lo)}
})

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768 // Linux's default; macOS's range starts higher (49152)
}

// peek is the port take tries next.
func (a *portAllocator) peek() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.next
}

// take is the next port nobody listens on, never one handed out before.
func (a *portAllocator) take() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.used < a.hi-a.lo {
		p := a.next
		a.next++
		if a.next == a.hi {
			a.next = a.lo
		}
		a.used++
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p, true
		}
	}
	return 0, false
}

// freePort is a loopback port for a process that must be told a number
// (see the top of this file); nothing else in this process gets it.
func freePort(t *testing.T) int {
	t.Helper()
	p, ok := processPorts().take()
	if !ok {
		t.Fatal("every port below the ephemeral range has been handed out")
	}
	return p
}

// freePorts is n distinct ports from freePort.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	return ports
}

// TestFreePortsAreNeverDrawnTwice: the ports handed to processes that can
// only be told a number are distinct across many draws, free when drawn,
// and below the kernel's ephemeral range, where no :0 listener or
// outgoing connection of any process can be given them.
func TestFreePortsAreNeverDrawnTwice(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range freePorts(t, 500) {
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if p >= low {
			t.Errorf("port %d is in the ephemeral range (from %d)", p, low)
		}
	}
	// A port someone holds (this test, or whoever already had it) is
	// passed over.
	next := processPorts().peek()
	if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(next)); err == nil {
		defer l.Close()
	}
	if p := freePort(t); p == next {
		t.Errorf("port %d handed out while another socket listens on it", p)
	}
}
