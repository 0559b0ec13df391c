package breaker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis, shared by every instance on one server
// (`limits redis`). A session is one hash (its counts, spend by minute,
// status) and one list per conversation (its last turns, 13 bytes each);
// each operation is one Lua script, so two instances serving one session
// never lose a turn or both trip it.
type Redis struct {
	c                                 *redis.Client
	prefix                            string
	turn, extend, spend, trip, resume *redis.Script
}

// NewRedis keeps its sessions under prefix (e.g. "modelgate:breaker:").
func NewRedis(c *redis.Client, prefix string) *Redis {
	return &Redis{c: c, prefix: prefix, turn: redis.NewScript(fmt.Sprintf(followHold, 6, 5) + fmt.Sprintf(turnScript, velocityMinutes-1)),
		extend: redis.NewScript(fmt.Sprintf(followHold, 2, 1) + extendScript), spend: redis.NewScript(fmt.Sprintf(spendScript, velocityMinutes)),
		trip: redis.NewScript(tripScript), resume: redis.NewScript(resumeScript)}
}

// The keys of a session share its hash tag, so a cluster keeps them on
// one node, as a script needs.
func (r *Redis) keys(scope string, thread uint64) []string {
	h := r.prefix + "{" + scope + "}"
	return []string{h, h + ":" + strconv.FormatUint(thread, 16)}
}

const ttlMillis = int64(idle / time.Millisecond)

// followHold moves a session trip's hold on the conversation along with
// a turn (ARGV prev, head) that repeats or extends the held one.
const followHold = `
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and ARGV[%[1]d] ~= '0' then
  local hold = redis.call('HGET', KEYS[1], 'hold')
  if hold == ARGV[%[2]d] or hold == ARGV[%[1]d] then redis.call('HSET', KEYS[1], 'hold', ARGV[%[1]d]) end
end`

const turnScript = `
local st = redis.call('HGET', KEYS[1], 'status')
local dup = 0
if st and st ~= '' then
  dup = 2
elseif ARGV[1] ~= '0' and redis.call('HGET', KEYS[1], 'tail') == ARGV[1] then
  dup = 1
else
  if ARGV[6] ~= '0' then
    local head = redis.call('HGET', KEYS[1], 'head')
    if head and head ~= ARGV[5] then
      redis.call('DEL', KEYS[2])
      redis.call('HSET', KEYS[1], 'turns', 0, 'spent', 0)
      for i = 0, %d do redis.call('HDEL', KEYS[1], 'm'..i, 'b'..i) end
    end
    redis.call('HSET', KEYS[1], 'head', ARGV[6])
  end
  redis.call('HSET', KEYS[1], 'tail', ARGV[1])
  redis.call('HINCRBY', KEYS[1], 'turns', 1)
  if ARGV[2] ~= '' then
    redis.call('RPUSH', KEYS[2], ARGV[2])
    redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {dup, redis.call('LRANGE', KEYS[2], 0, -1), redis.call('HGETALL', KEYS[1])}`

const extendScript = `
local head = redis.call('HGET', KEYS[1], 'head')
if not head or (head ~= ARGV[1] and head ~= ARGV[2]) then return {0, redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'head', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, redis.call('HGETALL', KEYS[1])}`

const spendScript = `
local i = tonumber(ARGV[2]) %% %d
if redis.call('HGET', KEYS[1], 'm'..i) ~= ARGV[2] then
  redis.call('HSET', KEYS[1], 'm'..i, ARGV[2], 'b'..i, 0)
end
redis.call('HINCRBY', KEYS[1], 'b'..i, ARGV[1])
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`

const tripScript = `
if tonumber(redis.call('HGET', KEYS[1], 'trips') or '0') ~= tonumber(ARGV[1]) then return 0 end
redis.call('HINCRBY', KEYS[1], 'trips', 1)
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'pattern', ARGV[3], 'token', ARGV[4])
if ARGV[5] ~= '0' then redis.call('HSET', KEYS[1], 'vtrip', ARGV[5]) end
redis.call('DEL', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1`

const resumeScript = `
local st = redis.call('HGET', KEYS[1], 'status')
if not st or st == '' then return {'', 0} end
if ARGV[1] ~= '' and (st ~= 'pause' or redis.call('HGET', KEYS[1], 'token') ~= ARGV[1]) then return {st, 0} end
redis.call('HSET', KEYS[1], 'status', '', 'token', '')
return {st, 1}`

func encodeMark(m mark) string {
	if m.key == 0 {
		return ""
	}
	var b [13]byte
	binary.BigEndian.PutUint64(b[:8], m.key)
	binary.BigEndian.PutUint32(b[8:12], m.fail)
	if m.calls {
		b[12] = 1
	}
	return string(b[:])
}

func decodeMark(s string) (mark, bool) {
	if len(s) != 13 {
		return mark{}, false
	}
	return mark{key: binary.BigEndian.Uint64([]byte(s[:8])), fail: binary.BigEndian.Uint32([]byte(s[8:12])), calls: s[12] == 1}, true
}

// Turn implements Store.
func (r *Redis) Turn(ctx context.Context, scope string, thread, tail uint64, m mark, l link, _ time.Time) (state, error) {
	v, err := r.turn.Run(ctx, r.c, r.keys(scope, thread), strconv.FormatUint(tail, 10), encodeMark(m), ttlMillis, ringSize,
		strconv.FormatUint(l.prev, 10), strconv.FormatUint(l.head, 10)).Slice()
	if err != nil {
		return state{}, err
	}
	if len(v) != 3 {
		return state{}, errors.New("breaker redis: unexpected answer to a turn")
	}
	ring, _ := v[1].([]any)
	fields, _ := v[2].([]any)
	s := stateOf(fields)
	s.dup = v[0] == int64(1)
	for _, x := range ring {
		str, _ := x.(string)
		if m, ok := decodeMark(str); ok {
			s.ring = append(s.ring, m)
		}
	}
	return s, nil
}

// stateOf reads a session's hash from HGETALL's flat list.
func stateOf(fields []any) state {
	var s state
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "turns":
			s.turns = n
		case "spent":
			s.spent = n
		case "status":
			s.status = v
		case "pattern":
			s.pattern = v
		case "token":
			s.token = v
		case "trips":
			s.trips = n
		case "vtrip":
			s.vtrip = n
		case "head":
			s.head, _ = strconv.ParseUint(v, 10, 64)
		case "holder":
			s.holder = v
		case "hold":
			s.hold, _ = strconv.ParseUint(v, 10, 64)
		default:
			if len(k) == 2 && (k[0] == 'b' || k[0] == 'm') && k[1] >= '0' && k[1] < '0'+velocityMinutes {
				b := &s.window[k[1]-'0']
				if k[0] == 'b' {
					b.pico = n
				} else {
					b.minute = n
				}
			}
		}
	}
	return s
}

// Extend implements Store.
func (r *Redis) Extend(ctx context.Context, scope string, l link, _ time.Time) (state, bool, error) {
	v, err := r.extend.Run(ctx, r.c, r.keys(scope, 0)[:1], strconv.FormatUint(l.prev, 10), strconv.FormatUint(l.head, 10), ttlMillis).Slice()
	if err != nil {
		return state{}, false, err
	}
	if len(v) != 2 {
		return state{}, false, errors.New("breaker redis: unexpected answer to an extend")
	}
	fields, _ := v[1].([]any)
	s := stateOf(fields)
	if v[0] != int64(1) {
		return state{holder: s.holder, hold: s.hold}, false, nil
	}
	return s, true, nil
}

// Hold implements Store.
func (r *Redis) Hold(ctx context.Context, scope, holder string, head uint64, _ time.Time) error {
	k := r.keys(scope, 0)[0]
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "holder", holder, "hold", strconv.FormatUint(head, 10))
		p.PExpire(ctx, k, idle)
		return nil
	})
	return err
}

// Spend implements Store.
func (r *Redis) Spend(ctx context.Context, scope string, pico int64, now time.Time) error {
	return r.spend.Run(ctx, r.c, r.keys(scope, 0)[:1], pico, now.Unix()/60, ttlMillis).Err()
}

// Trip implements Store.
func (r *Redis) Trip(ctx context.Context, scope string, thread uint64, seen int64, t tripState) (bool, error) {
	n, err := r.trip.Run(ctx, r.c, r.keys(scope, thread), seen, t.status, t.pattern, t.token, t.vtrip, ttlMillis).Int64()
	return n == 1, err
}

// Resume implements Store.
func (r *Redis) Resume(ctx context.Context, scope, token string) (string, bool, error) {
	v, err := r.resume.Run(ctx, r.c, r.keys(scope, 0)[:1], token).Slice()
	if err != nil {
		return "", false, err
	}
	if len(v) != 2 {
		return "", false, fmt.Errorf("breaker redis: unexpected answer to a resume")
	}
	was, _ := v[0].(string)
	return was, v[1] == int64(1), nil
}

// Peek implements Store.
func (r *Redis) Peek(ctx context.Context, scope string) (state, bool, error) {
	m, err := r.c.HGetAll(ctx, r.keys(scope, 0)[0]).Result()
	if err != nil || len(m) == 0 {
		return state{}, false, err
	}
	flat := make([]any, 0, 2*len(m))
	for k, v := range m {
		flat = append(flat, k, v)
	}
	return stateOf(flat), true, nil
}
