package rediscache

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// queue holds the entries waiting to be written, oldest first, at most
// max: an entry leaves it once written, or dropped as the oldest when a
// newer one finds it full.
type queue struct {
	mu      sync.Mutex // guards the fields below
	max     int
	items   []item
	next    uint64 // the seq of the next item pushed
	dropped uint64
}

// push appends it, dropping the oldest beyond max.
func (q *queue) push(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it.seq = q.next
	q.next++
	q.items = append(q.items, it)
	if over := len(q.items) - q.max; over > 0 {
		clear(q.items[:over])
		q.items = q.items[over:]
		q.dropped += uint64(over)
	}
}

// peek returns a copy of up to n of the oldest items, which stay queued.
func (q *queue) peek(n int) []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]item(nil), q.items[:min(n, len(q.items))]...)
}

// done removes the items up to seq, once written (some may have been
// dropped meanwhile).
func (q *queue) done(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(q.items) && q.items[n].seq <= seq {
		n++
	}
	clear(q.items[:n])
	q.items = q.items[n:]
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *queue) status() (int, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items), q.dropped
}

// writer writes queued entries when woken, retrying every RetryInterval
// while Redis is unreachable (pinging it when nothing is queued). On
// Close it writes what is queued once more and ends.
func (s *Shared) writer() {
	defer close(s.wrote)
	retry := time.NewTicker(s.cfg.RetryInterval)
	defer retry.Stop()
	for {
		select {
		case <-s.stop:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
			defer cancel()
			for s.flush(ctx) {
			}
			return
		case <-s.wake:
		case <-retry.C:
			if !s.healthy.Load() && s.q.len() == 0 {
				s.ping()
			}
		}
		for s.flush(s.ctx) {
		}
	}
}

// ping tries Redis, marking it up or down.
func (s *Shared) ping() {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.down(err)
		return
	}
	s.up(false)
}

// flush writes one batch of queued entries and reports whether more may
// follow: the batch was written and the queue is not empty.
func (s *Shared) flush(parent context.Context) bool {
	batch := s.q.peek(s.cfg.BatchSize)
	if len(batch) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(parent, s.cfg.OpTimeout)
	defer cancel()
	if err := s.write(ctx, batch); err != nil {
		s.down(err)
		return false
	}
	s.q.done(batch[len(batch)-1].seq)
	s.written.Add(uint64(len(batch)))
	s.up(false)
	return s.q.len() > 0
}

// write sends batch in one transaction: each entry under its key
// (expiring at the end of its grace), in the index by that time, and on
// the stream; entries past their grace leave the index.
func (s *Shared) write(ctx context.Context, batch []item) error {
	now := s.clock.Now()
	grace := s.c.Config().Grace
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, it := range batch {
			until := it.e.Expires.Add(grace)
			ttl := until.Sub(now)
			if ttl < time.Millisecond { // past its grace: nothing to share (PX takes milliseconds)
				continue
			}
			key, value := s.keys.entry(it.tenant, it.e.Question), encode(it.tenant, it.vec, it.e, s.cfg.Instance)
			p.Set(ctx, key, value, ttl)
			p.ZAdd(ctx, s.keys.index(), redis.Z{Score: float64(until.UnixMilli()), Member: key})
			p.XAdd(ctx, &redis.XAddArgs{Stream: s.keys.stream(), MaxLen: s.cfg.StreamMaxLen, Approx: true,
				Values: []string{"e", string(value)}})
		}
		p.ZRemRangeByScore(ctx, s.keys.index(), "-inf", "("+itoa(now.UnixMilli()))
		return nil
	})
	return err
}
