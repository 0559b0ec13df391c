//go:build linux || darwin || freebsd || netbsd || openbsd

package upstream

import (
	"net"
	"syscall"
)

// plainHTTP says this platform can tell a closed idle connection from a
// live one before using it (connAlive), which the plain transport needs.
const plainHTTP = true

// connAlive says an idle connection was neither closed by the server nor
// sent bytes nobody asked for: a peek that must find nothing to read. It
// stands in for net/http's reader goroutine, which notices a server's
// close while the connection waits.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, e := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = e == syscall.EAGAIN || e == syscall.EWOULDBLOCK
		return true // never wait for readability: only now counts
	})
	return err == nil && alive
}
