package rediscache

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// readCount is how many stream entries one read returns at most.
const readCount = 512

// loadPage is how many keys one round trip of a load reads.
const loadPage = 500

// follower loads the live entries (at start, after an outage, after
// falling behind the stream's trim), then follows the stream from the
// last entry the load saw, storing the entries of other instances.
func (s *Shared) follower() {
	defer s.wg.Done()
	last := "0-0"
	for s.ctx.Err() == nil {
		if s.reload.Load() {
			id, err := s.load()
			if err != nil {
				s.down(err)
				if !s.pause(s.cfg.RetryInterval) {
					return
				}
				continue
			}
			last = id
			continue
		}
		msgs, behind, err := s.read(last)
		if err != nil {
			s.down(err)
			if !s.pause(s.cfg.RetryInterval) {
				return
			}
			continue
		}
		s.up(false)
		if behind {
			s.reload.Store(true)
			continue
		}
		for _, m := range msgs {
			s.apply(m.Values)
			last = m.ID
		}
	}
}

// read returns the stream's entries after last, waiting up to Block for
// one, and whether entries after last were trimmed before being read.
func (s *Shared) read(last string) ([]redis.XMessage, bool, error) {
	return s.readWith(s.ctx, last, s.cfg.Block)
}

// readWith implements read, waiting up to block under parent.
func (s *Shared) readWith(parent context.Context, last string, block time.Duration) ([]redis.XMessage, bool, error) {
	ctx, cancel := context.WithTimeout(parent, block+s.cfg.OpTimeout)
	defer cancel()
	p := s.rdb.Pipeline()
	first := p.XRangeN(ctx, s.keys.stream(), "-", "+", 1)
	rd := p.XRead(ctx, &redis.XReadArgs{Streams: []string{s.keys.stream(), last}, Count: readCount, Block: block})
	_, err := p.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	if f := first.Val(); len(f) > 0 && idBefore(last, f[0].ID) && last != "0-0" {
		return nil, true, nil
	}
	var msgs []redis.XMessage
	for _, st := range rd.Val() {
		msgs = append(msgs, st.Messages...)
	}
	return msgs, false, nil
}

// apply stores a stream entry of another instance.
func (s *Shared) apply(values map[string]any) {
	v, _ := values["e"].(string)
	w, vec, e, err := decode([]byte(v))
	if err != nil || w.Origin == s.cfg.Instance {
		return
	}
	s.seen.Add(1)
	if s.c.Restore(w.Tenant, w.Question, vec, e) == nil {
		s.received.Add(1)
	}
}

// load stores the live entries held in Redis, at most LoadLimit, those
// expiring last first, and returns the stream's last entry before it
// began, to follow on from.
func (s *Shared) load() (string, error) {
	s.reload.Store(false) // a request during the load asks for another
	s.loading.Store(true)
	defer s.loading.Store(false)
	s.loads.Add(1)
	start := time.Now()
	n, last, err := s.loadEntries()
	if err != nil {
		s.reload.Store(true)
		return "", err
	}
	s.up(true)
	now := s.clock.Now()
	s.mu.Lock()
	s.loaded, s.loadedAt = n, now
	s.mu.Unlock()
	s.log.Info("shared cache: loaded live entries", "prefix", s.cfg.Prefix, "entries", n, "took", time.Since(start).Round(time.Millisecond))
	return last, nil
}

// loadEntries implements load: it returns the entries stored and the
// stream position.
func (s *Shared) loadEntries() (int, string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	xs, err := s.rdb.XRevRangeN(ctx, s.keys.stream(), "+", "-", 1).Result()
	cancel()
	if err != nil {
		return 0, "", err
	}
	last := "0-0"
	if len(xs) > 0 {
		last = xs[0].ID
	}
	lo := strconv.FormatInt(s.clock.Now().UnixMilli(), 10)
	stored := 0
	for off := 0; off < s.cfg.LoadLimit; off += loadPage {
		ctx, cancel := context.WithTimeout(s.ctx, s.pageTimeout())
		ks, err := s.rdb.ZRevRangeByScore(ctx, s.keys.index(), &redis.ZRangeBy{Min: lo, Max: "+inf",
			Offset: int64(off), Count: int64(min(loadPage, s.cfg.LoadLimit-off))}).Result()
		var vals []any
		if err == nil && len(ks) > 0 {
			vals, err = s.rdb.MGet(ctx, ks...).Result()
		}
		cancel()
		if err != nil {
			return 0, "", err
		}
		stored += s.restore(ks, vals)
		if len(ks) < loadPage {
			break
		}
	}
	return stored, last, nil
}

// pageTimeout bounds the read of one page of the load: loadPage entries
// with their vectors (megabytes at a large model's dimensions) take far
// longer than OpTimeout's single small reply, and a page cut short starts
// the load over; at least a second, or 20 times OpTimeout.
func (s *Shared) pageTimeout() time.Duration { return max(20*s.cfg.OpTimeout, time.Second) }

// restore stores the loaded values of keys ks and returns how many it
// stored. An entry whose key names another tenant than the entry itself
// is skipped.
func (s *Shared) restore(ks []string, vals []any) int {
	n := 0
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired since the index was read
		}
		w, vec, e, err := decode([]byte(str))
		if err != nil {
			continue
		}
		if t, ok := s.keys.tenantOf(ks[i]); !ok || t != w.Tenant {
			continue
		}
		if s.c.Restore(w.Tenant, w.Question, vec, e) == nil {
			n++
		}
	}
	return n
}

// idBefore reports whether stream ID a comes before b.
func idBefore(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || am == bm && as < bs
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	q, _ := strconv.ParseUint(seq, 10, 64)
	return m, q
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
