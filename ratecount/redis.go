// Package ratecount counts rate-limit windows in Redis, so every gateway
// instance on one Redis shares one count. It speaks the few commands it
// needs over RESP itself (EVALSHA, SCRIPT LOAD, AUTH, SELECT, PING): each
// count is one Lua script run atomically by Redis, so no instance reads a
// count another is about to change.
package ratecount

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Redis is a small pool of connections to one Redis server.
type Redis struct {
	addr, password, username string
	db                       int
	tls                      bool
	dialTimeout              time.Duration

	mu   sync.Mutex
	idle []*conn
	shas map[string]string // script → SHA1, loaded once per server
}

type conn struct {
	c net.Conn
	r *bufio.Reader
}

// Open parses a redis:// URL and checks the server answers.
func Open(ctx context.Context, rawURL string) (*Redis, error) {
	r, err := New(rawURL)
	if err != nil {
		return nil, err
	}
	if _, err := r.do(ctx, "PING"); err != nil {
		return nil, fmt.Errorf("limits redis: %v", err)
	}
	return r, nil
}

// New parses a redis:// URL (redis://[user:password@]host:port/db); it
// connects only when a count is asked for, so a Redis that is down at
// start is a warning at the first request, not a failed start.
func New(rawURL string) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		// The URL may hold a password: never echo it.
		return nil, errors.New("limits redis: want a URL like redis://localhost:6379/0")
	}
	r := &Redis{addr: u.Host, tls: u.Scheme == "rediss", dialTimeout: 2 * time.Second, shas: map[string]string{}}
	if r.tls {
		return nil, errors.New("limits redis: rediss:// (TLS) is not supported yet; use a local Redis or a TLS tunnel")
	}
	if !strings.Contains(r.addr, ":") {
		r.addr += ":6379"
	}
	if u.User != nil {
		r.username = u.User.Username()
		r.password, _ = u.User.Password()
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if r.db, err = strconv.Atoi(p); err != nil {
			return nil, errors.New("limits redis: the path must be a database number, e.g. redis://localhost:6379/0")
		}
	}
	return r, nil
}

func (r *Redis) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: r.dialTimeout}
	c, err := d.DialContext(ctx, "tcp", r.addr)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, r: bufio.NewReader(c)}
	if r.password != "" {
		args := []string{"AUTH", r.password}
		if r.username != "" {
			args = []string{"AUTH", r.username, r.password}
		}
		if _, err := cn.roundTrip(ctx, args); err != nil {
			c.Close()
			return nil, errors.New("AUTH failed")
		}
	}
	if r.db != 0 {
		if _, err := cn.roundTrip(ctx, []string{"SELECT", strconv.Itoa(r.db)}); err != nil {
			c.Close()
			return nil, err
		}
	}
	return cn, nil
}

// do runs one command on a pooled connection.
func (r *Redis) do(ctx context.Context, args ...string) (any, error) {
	r.mu.Lock()
	var cn *conn
	if n := len(r.idle); n > 0 {
		cn, r.idle = r.idle[n-1], r.idle[:n-1]
	}
	r.mu.Unlock()
	if cn == nil {
		var err error
		if cn, err = r.dial(ctx); err != nil {
			return nil, err
		}
	}
	v, err := cn.roundTrip(ctx, args)
	var rerr redisError
	if err != nil && !errors.As(err, &rerr) {
		cn.c.Close()
		return nil, err
	}
	r.mu.Lock()
	if len(r.idle) < 16 {
		r.idle = append(r.idle, cn)
	} else {
		cn.c.Close()
	}
	r.mu.Unlock()
	return v, err
}

// Close closes the idle connections.
func (r *Redis) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.idle {
		c.c.Close()
	}
	r.idle = nil
}

type redisError string

func (e redisError) Error() string { return "redis: " + string(e) }

func (c *conn) roundTrip(ctx context.Context, args []string) (any, error) {
	deadline := time.Now().Add(2 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.c.SetDeadline(deadline)
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return c.read()
}

// read reads one RESP2 reply: integers, simple and bulk strings, arrays
// and errors (returned as redisError).
func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("redis: short reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, redisError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := readFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unexpected reply %q", line[0])
}

func readFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// eval runs script by SHA, loading it on first use or after a server
// restart forgot it.
func (r *Redis) eval(ctx context.Context, script string, keys []string, args ...string) (any, error) {
	r.mu.Lock()
	sha := r.shas[script]
	r.mu.Unlock()
	if sha != "" {
		v, err := r.do(ctx, append(append([]string{"EVALSHA", sha, strconv.Itoa(len(keys))}, keys...), args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), "redis: NOSCRIPT") {
			return v, err
		}
	}
	v, err := r.do(ctx, "SCRIPT", "LOAD", script)
	if err != nil {
		return nil, err
	}
	sha, _ = v.(string)
	r.mu.Lock()
	r.shas[script] = sha
	r.mu.Unlock()
	return r.do(ctx, append(append([]string{"EVALSHA", sha, strconv.Itoa(len(keys))}, keys...), args...)...)
}
