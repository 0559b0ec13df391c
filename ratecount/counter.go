package ratecount

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// The scripts run atomically in Redis: a count and its check are one step
// for every instance. Window keys expire after two minutes. A request in
// progress holds a lease, a member of the scope's sorted set scored by
// its deadline in Redis's own clock (TIME), so instances with skewed
// clocks agree; leases past their deadline are dropped before each count,
// so a slot a crashed instance held, or whose release was lost, comes
// back within the lease however busy the key stays.

// takeScript: KEYS[1] = window hash; ARGV = rpm, tpm (0: no limit),
// reserve (the request's token estimate, counted in the window until it
// settles). Returns {ok, reqs, tokens}.
const takeScript = `
local reqs = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
local toks = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local rpm, tpm, reserve = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if (rpm > 0 and reqs >= rpm) or (tpm > 0 and toks + reserve > tpm) then
  return {0, reqs, toks}
end
reqs = redis.call('HINCRBY', KEYS[1], 'r', 1)
if reserve > 0 then toks = redis.call('HINCRBY', KEYS[1], 't', reserve) end
redis.call('EXPIRE', KEYS[1], 120)
return {1, reqs, toks}
`

// settleScript: KEYS[1] = window hash; ARGV = tokens (negative: a
// reservation larger than the use), settlement id. The id makes a retried
// settlement count once; the count never falls below zero, and a window
// already gone (expired) is left gone.
const settleScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' and redis.call('HSETNX', KEYS[1], 's:' .. ARGV[2], 1) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[1], 't', ARGV[1]) < 0 then redis.call('HSET', KEYS[1], 't', 0) end
return 1
`

// leaseNow is Redis's clock in milliseconds. Scripts that read TIME must
// replicate their effects, not themselves (the default from Redis 5).
const leaseNow = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// acquireScript: KEYS[1] = lease set; ARGV = max, lease id, lease in ms.
const acquireScript = leaseNow + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`

// renewScript: KEYS[1] = lease set; ARGV = lease id, lease in ms. Only a
// lease still in the set is extended (XX): a renewal that reaches Redis
// after its request's release must not take the slot back for a whole
// lease with nobody left to release it.
const renewScript = leaseNow + `
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`

// releaseScript: KEYS[1] = lease set; ARGV[1] = lease id. Releasing twice
// is releasing once, so a release whose answer was lost can be retried.
const releaseScript = `
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`

const prefix = "modelgate:rl:"

func windowKey(scope string, window int64) string {
	return prefix + scope + ":" + strconv.FormatInt(window, 10)
}

// leaseKey is a scope's set of leases. It is not the ":inflight" counter
// of earlier versions, so an instance of each can run on one Redis
// during an upgrade without a WRONGTYPE error.
func leaseKey(scope string) string { return prefix + scope + ":leases" }

func millis(d time.Duration) string { return strconv.FormatInt(max(1, d.Milliseconds()), 10) }

// Take implements policy.RateCounter.
func (r *Redis) Take(ctx context.Context, scope string, window, rpm, tpm, reserve int64) (int64, int64, bool, error) {
	v, err := r.eval(ctx, r.take, []string{windowKey(scope, window)},
		strconv.FormatInt(rpm, 10), strconv.FormatInt(tpm, 10), strconv.FormatInt(max(0, reserve), 10))
	if err != nil {
		return 0, 0, false, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return 0, 0, false, errors.New("redis: unexpected answer to the rate script")
	}
	okN, _ := a[0].(int64)
	reqs, _ := a[1].(int64)
	toks, _ := a[2].(int64)
	return reqs, toks, okN == 1, nil
}

// AddTokens implements policy.RateCounter.
func (r *Redis) AddTokens(ctx context.Context, scope string, window, n int64, id string) error {
	_, err := r.eval(ctx, r.settle, []string{windowKey(scope, window)}, strconv.FormatInt(n, 10), id)
	return err
}

// Acquire implements policy.RateCounter.
func (r *Redis) Acquire(ctx context.Context, scope, lease string, max int64, ttl time.Duration) (bool, error) {
	v, err := r.eval(ctx, r.acquire, []string{leaseKey(scope)}, strconv.FormatInt(max, 10), lease, millis(ttl))
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Renew implements policy.RateCounter.
func (r *Redis) Renew(ctx context.Context, scope, lease string, ttl time.Duration) error {
	_, err := r.eval(ctx, r.renew, []string{leaseKey(scope)}, lease, millis(ttl))
	return err
}

// Release implements policy.RateCounter.
func (r *Redis) Release(ctx context.Context, scope, lease string) error {
	_, err := r.eval(ctx, r.release, []string{leaseKey(scope)}, lease)
	return err
}

// endScript: KEYS[1] = lease set, KEYS[2] = window hash; ARGV = lease id
// (also the settlement id), tokens. releaseScript and settleScript in one
// round trip, for a request that held a slot and reserved tokens.
const endScript = `
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
if redis.call('HSETNX', KEYS[2], 's:' .. ARGV[1], 1) == 0 then return 1 end
if redis.call('HINCRBY', KEYS[2], 't', ARGV[2]) < 0 then redis.call('HSET', KEYS[2], 't', 0) end
return 1
`

// ReleaseAndSettle is Release and AddTokens (with lease as the
// settlement id) in one round trip; like each of them, it can be retried.
func (r *Redis) ReleaseAndSettle(ctx context.Context, scope, lease string, window, n int64) error {
	_, err := r.eval(ctx, r.end, []string{leaseKey(scope), windowKey(scope, window)}, lease, strconv.FormatInt(n, 10))
	return err
}
