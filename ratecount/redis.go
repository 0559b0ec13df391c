// Package ratecount counts rate-limit windows in Redis, so every gateway
// instance on one Redis shares one count. Each count is one Lua script
// run atomically by Redis (through go-redis, which loads a script by SHA
// and sends it again when the server forgot it), so no instance reads a
// count another is about to change.
package ratecount

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a pool of connections to one Redis server and the scripts
// that count on it.
type Redis struct {
	c *redis.Client

	take, settle, acquire, renew, release, end, chunk, giveBack *redis.Script
}

// Open parses a redis:// URL and checks the server answers.
func Open(ctx context.Context, rawURL string) (*Redis, error) {
	r, err := New(rawURL)
	if err != nil {
		return nil, err
	}
	if _, err := r.do(ctx, "PING"); err != nil {
		r.Close()
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
	if u.Scheme == "rediss" {
		return nil, errors.New("limits redis: rediss:// (TLS) is not supported yet; use a local Redis or a TLS tunnel")
	}
	o := &redis.Options{
		Addr: u.Host,
		// RESP2 without a HELLO or CLIENT SETINFO handshake: the replies
		// the scripts give are integers and arrays, and any Redis (or a
		// compatible server) answers them the same way.
		Protocol:        2,
		DisableIdentity: true,
		DialTimeout:     2 * time.Second,
		ReadTimeout:     2 * time.Second,
		WriteTimeout:    2 * time.Second,
		// A request's own deadline bounds its count when shorter.
		ContextTimeoutEnabled: true,
		// No retries inside the client: a take whose answer was lost may
		// have counted, and counting it again would refuse a request that
		// fits. Releases and settlements are retried by the caller, with
		// ids that make a retry count once.
		MaxRetries: -1,
		// A request never queues for a connection behind a small pool
		// (go-redis's default is 10 per CPU, and a wait past PoolTimeout
		// is a failure that sends the process to counting alone): as
		// the hand-written pool did, it dials when none is idle, and
		// some are kept idle for the next burst.
		PoolSize:     512,
		MaxIdleConns: 64,
	}
	if !strings.Contains(o.Addr, ":") {
		o.Addr += ":6379"
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if o.DB, err = strconv.Atoi(p); err != nil {
			return nil, errors.New("limits redis: the path must be a database number, e.g. redis://localhost:6379/0")
		}
	}
	return &Redis{
		c:        redis.NewClient(o),
		take:     redis.NewScript(takeScript),
		settle:   redis.NewScript(settleScript),
		acquire:  redis.NewScript(acquireScript),
		renew:    redis.NewScript(renewScript),
		release:  redis.NewScript(releaseScript),
		end:      redis.NewScript(endScript),
		chunk:    redis.NewScript(chunkScript),
		giveBack: redis.NewScript(giveBackScript),
	}, nil
}

// do runs one command on a pooled connection.
func (r *Redis) do(ctx context.Context, args ...string) (any, error) {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return r.c.Do(ctx, a...).Result()
}

// Close closes the pool's connections.
func (r *Redis) Close() { _ = r.c.Close() }

// eval runs script by SHA, sending it again when the server forgot it
// (a restart, SCRIPT FLUSH).
func (r *Redis) eval(ctx context.Context, s *redis.Script, keys []string, args ...string) (any, error) {
	// A client that leaves does not cancel its count: the script may be
	// on its way, and a canceled call would read as a Redis failure that
	// sends the whole process to counting alone. Only the request's
	// deadline, when it has one, bounds the call (ReadTimeout does
	// otherwise), as with the hand-written client before.
	run := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		run, cancel = context.WithDeadline(run, d)
		defer cancel()
	}
	ctx = run
	a := make([]any, len(args))
	for i, v := range args {
		a[i] = v
	}
	return s.Run(ctx, r.c, keys, a...).Result()
}
