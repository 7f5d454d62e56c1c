package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Calls in flight. Each instance writes, every cycle in which it has any
// (and once more when it has none left), the number of its calls in flight
// for the breaker's SlowCallDuration (breaker.Breaker.SlowInFlight) into
// the hash <prefix>:breaker:<name>:inflight, field <instance>, value
// "<count>:<unix ms>". Readers add the fresh fields, those written within
// the aggregate window, to the window's calls and slow calls, so that the
// cluster trips on calls that hang before any of them returns.

// localInflight returns the calls in flight for SlowCallDuration of the
// breakers attached under e in this process.
func (s *Store) localInflight(e *entry) int64 {
	var n int64
	for _, b := range s.targets(e) {
		n += int64(b.SlowInFlight())
	}
	return n
}

// sendInflight writes this instance's count of f into pipeline p and reads
// every instance's back, if there is anything to say or to read.
func (s *Store) sendInflight(ctx context.Context, p redis.Pipeliner, f *flush, now time.Time) {
	e := f.e
	if f.inflight == 0 && e.sentInflight == 0 {
		return
	}
	k := s.inflightKey(e.name)
	p.HSet(ctx, k, s.cfg.Instance, strconv.FormatInt(f.inflight, 10)+":"+strconv.FormatInt(now.UnixMilli(), 10))
	p.PExpire(ctx, k, e.width*time.Duration(e.buckets+1))
	f.held = p.HGetAll(ctx, k)
}

// clusterInflight adds up the fresh counts read by f at now.
func (s *Store) clusterInflight(f *flush, now time.Time) int {
	if f.held == nil {
		return 0
	}
	oldest := now.Add(-f.e.width * time.Duration(f.e.buckets)).UnixMilli()
	total := 0
	for _, v := range f.held.Val() {
		count, at, ok := strings.Cut(v, ":")
		n, err1 := strconv.Atoi(count)
		ms, err2 := strconv.ParseInt(at, 10, 64)
		if ok && err1 == nil && err2 == nil && n > 0 && ms >= oldest {
			total += n
		}
	}
	return total
}

func (s *Store) inflightKey(name string) string {
	return s.cfg.Prefix + ":breaker:" + name + ":inflight"
}
