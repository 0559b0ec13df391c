package ratecount

import (
	"context"
	"errors"
	"strconv"
)

// The scripts run atomically in Redis: a count and its check are one step
// for every instance. Window keys expire after two minutes; a slot count
// expires after ten, so slots a crashed instance held come back.

// takeScript: KEYS[1] = window hash; ARGV = rpm, tpm (0: no limit).
// Returns {ok, reqs, tokens}.
const takeScript = `
local reqs = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
local toks = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
if (rpm > 0 and reqs >= rpm) or (tpm > 0 and toks >= tpm) then
  return {0, reqs, toks}
end
reqs = redis.call('HINCRBY', KEYS[1], 'r', 1)
redis.call('EXPIRE', KEYS[1], 120)
return {1, reqs, toks}
`

// tokensScript: KEYS[1] = window hash; ARGV[1] = tokens.
const tokensScript = `
redis.call('HINCRBY', KEYS[1], 't', ARGV[1])
redis.call('EXPIRE', KEYS[1], 120)
return 1
`

// acquireScript: KEYS[1] = slot counter; ARGV[1] = max.
const acquireScript = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], 600)
return 1
`

// releaseScript: KEYS[1] = slot counter.
const releaseScript = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then redis.call('DECR', KEYS[1]) end
return 1
`

const prefix = "modelgate:rl:"

func windowKey(scope string, window int64) string {
	return prefix + scope + ":" + strconv.FormatInt(window, 10)
}

// Take implements handlers.RateCounter.
func (r *Redis) Take(ctx context.Context, scope string, window, rpm, tpm int64) (int64, int64, bool, error) {
	v, err := r.eval(ctx, takeScript, []string{windowKey(scope, window)}, strconv.FormatInt(rpm, 10), strconv.FormatInt(tpm, 10))
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

// AddTokens implements handlers.RateCounter.
func (r *Redis) AddTokens(ctx context.Context, scope string, window, n int64) error {
	_, err := r.eval(ctx, tokensScript, []string{windowKey(scope, window)}, strconv.FormatInt(n, 10))
	return err
}

// Acquire implements handlers.RateCounter.
func (r *Redis) Acquire(ctx context.Context, scope string, max int64) (bool, error) {
	v, err := r.eval(ctx, acquireScript, []string{prefix + scope + ":inflight"}, strconv.FormatInt(max, 10))
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Release implements handlers.RateCounter.
func (r *Redis) Release(ctx context.Context, scope string) error {
	_, err := r.eval(ctx, releaseScript, []string{prefix + scope + ":inflight"})
	return err
}
