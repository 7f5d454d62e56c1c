package redisstore

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// maxRPS bounds the rates a Limiter accepts; higher rates are cut to it.
const maxRPS = 1e9

// Limiter is a rate limiter shared by every process using the same Redis
// and prefix: the generic cell rate algorithm (GCRA) of
// github.com/go-redis/redis_rate, timed by the Redis server's clock. It is
// safe for concurrent use. Get one from Store.Limiter.
type Limiter struct {
	s  *Store
	rl *redis_rate.Limiter
}

// Limiter returns a Limiter sharing the store's connection, prefix, health
// and OpTimeout.
func (s *Store) Limiter() *Limiter {
	return &Limiter{s: s, rl: redis_rate.NewLimiter(prefixed{s.rdb, s.cfg.Prefix + ":"})}
}

// Allow takes one token for key from a limit of rps per second with bursts
// of burst (0 means max(1, rps)), and reports whether it was granted. A
// non-positive rps means no limit; rates above 1e9 are cut to it, and a rate
// so low that a token takes longer than the longest time.Duration (below
// about 1.08e-10 per second) gives a token every 292 years or so. It returns
// ErrUnavailable at once while the store is unhealthy, and the call's error
// (after at most OpTimeout) when Redis does not answer; the caller should
// then use a local limiter.
func (l *Limiter) Allow(ctx context.Context, key string, rps float64, burst int) (bool, error) {
	if !(rps > 0) {
		return true, nil
	}
	if !l.s.healthy.Load() || l.s.closed.Load() {
		return false, ErrUnavailable
	}
	rps = min(rps, maxRPS)
	if burst <= 0 {
		burst = max(1, int(math.Min(rps, math.MaxInt32)))
	}
	limit := redis_rate.Limit{Rate: 1, Burst: burst, Period: period(rps)}
	opCtx, cancel := context.WithTimeout(ctx, l.s.cfg.OpTimeout)
	defer cancel()
	res, err := l.rl.Allow(opCtx, key, limit) // redis_rate adds "rate:"
	if err != nil {
		// A caller that gave up (its own context done) says nothing
		// about Redis.
		if ctx.Err() == nil && (opCtx.Err() != nil || isConnErr(err)) {
			l.s.down(err)
		}
		return false, err
	}
	return res.Allowed > 0, nil
}

// period returns the time one token takes to come back at rps tokens per
// second (0 < rps <= maxRPS). Below about 1.08e-10 per second that time
// does not fit a time.Duration, and the conversion would overflow to a
// bogus (negative) period; it is capped at the longest Duration, about 292
// years, which no process outlives.
func period(rps float64) time.Duration {
	p := float64(time.Second) / rps
	if !(p < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(p)
}

// isConnErr reports whether err says Redis is unreachable rather than that
// it refused the command.
func isConnErr(err error) bool {
	var re redis.Error
	return !errors.As(err, &re)
}

// prefixed puts its prefix before the keys of the commands redis_rate
// sends (which start with "rate:"), so that the limiter's keys read
// "<prefix>:rate:<key>".
type prefixed struct {
	redis.UniversalClient
	prefix string
}

func (p prefixed) keys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.prefix + k
	}
	return out
}

func (p prefixed) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.Eval(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalSha(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalRO(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalShaRO(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return p.UniversalClient.Del(ctx, p.keys(keys)...)
}
