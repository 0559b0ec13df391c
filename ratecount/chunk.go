package ratecount

import (
	"context"
	"errors"
	"strconv"
)

// An instance takes a window's requests and tokens in chunks and admits
// from its chunk without a round trip; the count in Redis includes every
// chunk handed out, so instances together never pass a limit. A chunk is
// at most an eighth of what the window has left, and exactly what one
// request needs once that is less, so near a limit admission is as exact
// as one count per request; what an instance holds unused it gives back
// (giveBackScript) when it goes idle.

// Numbers reach Redis as strings the scripts format with %d: Lua's own
// conversion writes a large count as 1e+14, which HINCRBY refuses.

// chunkScript: KEYS[1] = window hash; ARGV = rpm, tpm (0: no limit), the
// requests and tokens the caller needs at least, and the requests and
// tokens it would like. Refuses (nothing taken) unless the needs fit.
// Returns {ok, reqs, tokens, granted reqs, granted tokens}, the counts
// after the grant.
const chunkScript = `
local reqs = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
local toks = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local needR, needT, wantR, wantT = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if (rpm > 0 and reqs + needR > rpm) or (tpm > 0 and toks + needT > tpm) then
  return {0, reqs, toks, 0, 0}
end
local gr, gt = math.max(needR, wantR), math.max(needT, wantT)
if rpm > 0 then gr = math.max(needR, math.min(gr, math.floor((rpm - reqs) / 8))) end
if tpm > 0 then gt = math.max(needT, math.min(gt, math.floor((tpm - toks) / 8))) end
if gr > 0 then reqs = redis.call('HINCRBY', KEYS[1], 'r', string.format('%d', gr)) end
if gt > 0 then toks = redis.call('HINCRBY', KEYS[1], 't', string.format('%d', gt)) end
redis.call('EXPIRE', KEYS[1], 120)
return {1, reqs, toks, gr, gt}
`

// giveBackScript: KEYS[1] = window hash; ARGV = requests, tokens, id.
// Like a settlement, it counts once however often it is sent, leaves a
// window that is gone alone, and never takes a count below zero.
const giveBackScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 's:' .. ARGV[3], 1) == 0 then return 0 end
for i, f in ipairs({'r', 't'}) do
  if ARGV[i] ~= '0' and redis.call('HINCRBY', KEYS[1], f, '-' .. ARGV[i]) < 0 then redis.call('HSET', KEYS[1], f, 0) end
end
return 1
`

// TakeChunk implements policy.ChunkCounter.
func (r *Redis) TakeChunk(ctx context.Context, scope string, window, rpm, tpm, needReqs, needTokens, wantReqs, wantTokens int64) (reqs, tokens, gotReqs, gotTokens int64, ok bool, err error) {
	v, err := r.eval(ctx, r.chunk, []string{windowKey(scope, window)}, itoa(rpm), itoa(tpm),
		itoa(max(0, needReqs)), itoa(max(0, needTokens)), itoa(max(0, wantReqs)), itoa(max(0, wantTokens)))
	if err != nil {
		return 0, 0, 0, 0, false, err
	}
	a, isList := v.([]any)
	if !isList || len(a) != 5 {
		return 0, 0, 0, 0, false, errors.New("redis: unexpected answer to the chunk script")
	}
	n := make([]int64, 5)
	for i := range a {
		n[i], _ = a[i].(int64)
	}
	return n[1], n[2], n[3], n[4], n[0] == 1, nil
}

// GiveBack implements policy.ChunkCounter.
func (r *Redis) GiveBack(ctx context.Context, scope string, window, reqs, tokens int64, id string) error {
	_, err := r.eval(ctx, r.giveBack, []string{windowKey(scope, window)}, itoa(max(0, reqs)), itoa(max(0, tokens)), id)
	return err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
