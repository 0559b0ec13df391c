package ratecount

import "github.com/redis/go-redis/v9"

// Client is the connection pool, for another package's scripts on the
// same Redis (the agent-run breaker's).
func (r *Redis) Client() *redis.Client { return r.c }
