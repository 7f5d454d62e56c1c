package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/breaker"
)

// probeHandoverScript ends a probe lease that this instance holds when
// the new open time ends (ARGV[2], Unix milliseconds), or at once if that
// is 0 or past.
const probeHandoverScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
  if tonumber(ARGV[2]) > 0 then return redis.call("PEXPIREAT", KEYS[1], ARGV[2]) end
  return redis.call("DEL", KEYS[1])
end
return 0`

// worker sends announcements and counts to Redis every FlushInterval (or
// at once when signalled), judges the aggregates, resyncs, and, while
// Redis is unreachable, tries it again every RetryInterval.
func (s *Store) worker() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	var lastTry time.Time
	for {
		select {
		case <-s.ctx.Done():
			if s.healthy.Load() {
				s.cycle(context.Background()) // last announcements, bounded by OpTimeout
				s.clusterCycle(context.Background())
				s.leave()
			}
			return
		case <-t.C:
		case <-s.wake:
		}
		if !s.healthy.Load() {
			s.dropCounts() // an outage's outcomes are judged locally only
			if time.Since(lastTry) < s.cfg.RetryInterval {
				continue
			}
			lastTry = time.Now()
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
			err := s.rdb.Ping(ctx).Err()
			cancel()
			if err != nil {
				continue
			}
			s.up()
		}
		s.cycle(s.ctx)
		s.clusterCycle(s.ctx)
	}
}

// flush is the outcomes of one name sent in one cycle.
type flush struct {
	e                     *entry
	calls, failures, slow int64
	inflight              int64 // this instance's calls in flight for SlowCallDuration
	reads                 []*redis.SliceCmd
	held                  *redis.MapStringStringCmd // every instance's calls in flight, if read
}

// resyncRead is the shared state of one name read in one cycle.
type resyncRead struct {
	e   *entry
	get *redis.StringCmd
}

// cycleWork is what one cycle sends and reads.
type cycleWork struct {
	names   map[string]*entry
	out     map[string]breaker.Shared // transitions to write and announce
	flushes []*flush
	reads   []resyncRead
}

// cycle makes one round trip to Redis, in a pipeline: write and announce
// the pending transitions, add the counts to the current time bucket and
// read the window back, and read the shared state of the names to resync.
func (s *Store) cycle(parent context.Context) {
	w := s.takeWork()
	if len(w.out) == 0 && len(w.flushes) == 0 && len(w.reads) == 0 {
		return
	}
	now := s.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(parent, s.cfg.OpTimeout)
	defer cancel()
	cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		s.announce(ctx, p, w, now)
		s.sendCounts(ctx, p, w.flushes, now)
		for i := range w.reads {
			w.reads[i].get = p.Get(ctx, s.stateKey(w.reads[i].e.name))
		}
		return nil
	})
	if err := firstErr(cmds); err != nil {
		s.down(err)
		s.requeue(w)
		return
	}
	s.up()
	for _, f := range w.flushes {
		var calls, failures, slow int
		for _, r := range f.reads {
			v := r.Val()
			calls += field(v, 0)
			failures += field(v, 1)
			slow += field(v, 2)
		}
		if f.held != nil {
			f.e.sentInflight = f.inflight
		}
		held := s.clusterInflight(f, now)
		if f.e.cfg.Exceeded(calls+held, failures, slow+held) {
			s.tripOne(f.e)
		}
	}
	for _, r := range w.reads {
		sh, ok := decodeState(r.get)
		s.reconcile(r.e, sh, ok)
	}
}

// takeWork takes the pending transitions, the counts recorded since the
// last cycle and the names to resync.
func (s *Store) takeWork() cycleWork {
	s.mu.Lock()
	var w cycleWork
	if len(s.outbox) > 0 {
		w.out, s.outbox = s.outbox, map[string]breaker.Shared{}
	}
	all := s.resyncAll
	s.resyncAll = false
	var want map[string]bool
	if len(s.resync) > 0 {
		want, s.resync = s.resync, map[string]bool{}
	}
	s.mu.Unlock()

	w.names = *s.names.Load()
	for _, e := range w.names {
		f := &flush{e: e, inflight: s.localInflight(e), failures: e.failures.Swap(0), slow: e.slow.Swap(0)}
		f.calls = e.calls.Swap() // last: a concurrent Record may only be undercounted
		if f.calls > 0 || f.inflight > 0 || e.sentInflight > 0 {
			w.flushes = append(w.flushes, f)
		}
	}
	for name, e := range w.names {
		if all || want[name] {
			w.reads = append(w.reads, resyncRead{e: e})
		}
	}
	return w
}

// announce writes and publishes the transitions of w into pipeline p, and
// empties the window of each name for its next period.
func (s *Store) announce(ctx context.Context, p redis.Pipeliner, w cycleWork, now time.Time) {
	for name, sh := range w.out {
		msg := encode(name, sh, s.cfg.Instance)
		p.Set(ctx, s.stateKey(name), msg, s.cfg.StateTTL)
		p.Publish(ctx, s.channel, msg)
		if sh.State == breaker.StateOpen {
			// A failed probe (or a trip) starts a new open period, whose
			// half-open period needs a new lease: the lease ends with the
			// open time, not before, so that a process that has not heard
			// of the failed probe yet cannot take it and probe again. After
			// a close the lease is left to expire, for the same reason.
			var until int64
			if !sh.OpenUntil.IsZero() {
				until = sh.OpenUntil.UnixMilli()
			}
			p.Eval(ctx, probeHandoverScript, []string{s.probeKey(name)}, s.cfg.Instance, until)
		}
		if e := w.names[name]; e != nil {
			idx := e.bucket(now)
			for i := range e.buckets { // the next period starts with an empty window
				p.Unlink(ctx, s.bucketKey(name, idx-int64(i)))
			}
			p.Unlink(ctx, s.inflightKey(name)) // and no call in flight
		}
	}
}

// sendCounts adds the counts of flushes to their current time buckets in
// pipeline p and reads their windows back.
func (s *Store) sendCounts(ctx context.Context, p redis.Pipeliner, flushes []*flush, now time.Time) {
	for _, f := range flushes {
		s.sendInflight(ctx, p, f, now)
		idx := f.e.bucket(now)
		k := s.bucketKey(f.e.name, idx)
		p.HIncrBy(ctx, k, "c", f.calls)
		if f.failures > 0 {
			p.HIncrBy(ctx, k, "f", f.failures)
		}
		if f.slow > 0 {
			p.HIncrBy(ctx, k, "s", f.slow)
		}
		p.PExpire(ctx, k, f.e.width*time.Duration(f.e.buckets+1))
		for i := range f.e.buckets {
			f.reads = append(f.reads, p.HMGet(ctx, s.bucketKey(f.e.name, idx-int64(i)), "c", "f", "s"))
		}
	}
}

// requeue puts back what a failed cycle did not send: the transitions not
// superseded meanwhile, and the names to resync.
func (s *Store) requeue(w cycleWork) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, sh := range w.out {
		if _, newer := s.outbox[name]; !newer {
			s.outbox[name] = sh
		}
	}
	for _, r := range w.reads {
		s.resync[r.e.name] = true
	}
}

// firstErr returns the first error of cmds other than redis.Nil.
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// field parses the i-th value of an HMGET reply; missing values are 0.
func field(v []any, i int) int {
	if i >= len(v) {
		return 0
	}
	str, ok := v[i].(string)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(str)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// decodeState returns the shared state read by get, if there is one.
func decodeState(get *redis.StringCmd) (breaker.Shared, bool) {
	if get == nil || get.Err() != nil {
		return breaker.Shared{}, false
	}
	_, sh, _, ok := decode([]byte(get.Val()))
	return sh, ok
}

// tripOne trips one CLOSED breaker of e: its announcement reaches the
// others, here through Publish and elsewhere through Redis.
func (s *Store) tripOne(e *entry) {
	for _, b := range s.targets(e) {
		if b.State() == breaker.StateClosed {
			b.TripBecause(breaker.CauseCluster, breaker.Reason{})
			return
		}
	}
}

// reconcile brings the breakers of e in line with the shared state sh
// (present says whether Redis holds one). A local open that the shared
// state does not cover is announced again, so that an open decided while
// Redis was unreachable reaches the cluster; otherwise the shared state is
// applied.
func (s *Store) reconcile(e *entry, sh breaker.Shared, present bool) {
	for _, b := range s.targets(e) {
		snap := b.Snapshot()
		if snap.State != breaker.StateOpen {
			if present {
				b.Apply(sh)
			}
			continue
		}
		if present && sh.State == breaker.StateOpen && !sh.OpenUntil.Before(snap.OpenUntil) {
			b.Apply(sh)
			continue
		}
		s.Publish(e.name, breaker.Shared{State: breaker.StateOpen, OpenUntil: snap.OpenUntil})
	}
}

// dropCounts forgets the outcomes recorded since the last flush.
func (s *Store) dropCounts() {
	for _, e := range *s.names.Load() {
		e.calls.Swap()
		e.failures.Store(0)
		e.slow.Store(0)
	}
}

// bucket returns the number of the aggregate bucket holding time t.
func (e *entry) bucket(t time.Time) int64 {
	return t.UnixMilli() / e.width.Milliseconds()
}

func (s *Store) bucketKey(name string, idx int64) string {
	return s.cfg.Prefix + ":breaker:" + name + ":w:" + strconv.FormatInt(idx, 10)
}
