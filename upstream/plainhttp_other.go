//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package upstream

import "net"

// plainHTTP is false where connAlive cannot peek at a socket: plain-HTTP
// upstreams then go through net/http's Transport.
const plainHTTP = false

func connAlive(net.Conn) bool { return false }
