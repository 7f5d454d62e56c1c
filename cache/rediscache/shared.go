package rediscache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/clock"
)

// Shared shares a cache.Cache with the other instances using the same
// Redis and prefix: it is the cache's Replica. It is safe for concurrent
// use. Call Close when done.
type Shared struct {
	cfg   Config
	c     *cache.Cache
	rdb   redis.UniversalClient
	own   bool // rdb was made by New: Close closes it
	keys  keys
	clock clock.Clock
	log   *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	stop   chan struct{}  // closed by Close: the writer flushes and ends
	wrote  chan struct{}  // closed by the writer as it ends
	wg     sync.WaitGroup // the follower
	wake   chan struct{}  // buffered 1: asks the writer for a round now
	closed atomic.Bool

	q queue // entries waiting to be written

	healthy  atomic.Bool
	reload   atomic.Bool // the follower loads the live entries before reading on
	loading  atomic.Bool
	loads    atomic.Int64
	written  atomic.Uint64
	received atomic.Uint64
	seen     atomic.Uint64

	mu       sync.Mutex // guards loaded and loadedAt
	loaded   int
	loadedAt time.Time
}

var _ cache.Replica = (*Shared)(nil)

// New returns a Shared and the local cache it shares, configured by
// cfg.Cache. It fails only on a bad configuration: with Redis unreachable
// the cache serves local entries and the Shared keeps trying. The live
// entries are loaded in the background (ShareStatus.Loading).
func New(cfg Config) (*Shared, *cache.Cache, error) {
	cfg = cfg.withDefaults()
	s := &Shared{cfg: cfg, rdb: cfg.Client, keys: keys{cfg.Prefix}, log: cfg.Logger,
		stop: make(chan struct{}), wrote: make(chan struct{}), wake: make(chan struct{}, 1), q: queue{max: cfg.QueueSize}}
	if s.rdb == nil {
		if cfg.URL == "" {
			return nil, nil, errors.New("rediscache: no Client and no URL")
		}
		opt, err := redis.ParseURL(cfg.URL)
		if err != nil {
			// The URL may hold a password: never repeat it.
			return nil, nil, errors.New("rediscache: invalid redis URL")
		}
		opt.ContextTimeoutEnabled = true
		s.rdb = redis.NewClient(opt)
		s.own = true
	}
	cc := cfg.Cache
	cc.Replica = s
	s.c = cache.New(cc)
	s.clock = s.c.Config().Clock
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.healthy.Store(true)
	s.reload.Store(true)
	s.wg.Add(1)
	go s.writer()
	go s.follower()
	return s, s.c, nil
}

// Cache returns the local cache.
func (s *Shared) Cache() *cache.Cache { return s.c }

// Instance returns the identity this Shared announces its entries under.
func (s *Shared) Instance() string { return s.cfg.Instance }

// Stored queues e, just stored by Put, for Redis; it never waits.
func (s *Shared) Stored(tenant string, vec []float32, e cache.Entry) {
	s.q.push(item{tenant: tenant, vec: append([]float32(nil), vec...), e: e})
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ShareStatus reports the sharing: Redis's health, the loads, the queue.
func (s *Shared) ShareStatus() cache.ShareStatus {
	st := cache.ShareStatus{Kind: "redis", Healthy: s.healthy.Load(), Loading: s.loading.Load(),
		Loads: int(s.loads.Load()), Written: s.written.Load(), Received: s.received.Load(), Seen: s.seen.Load()}
	st.Queued, st.Dropped = s.q.status()
	s.mu.Lock()
	st.Loaded, st.LoadedAt = s.loaded, s.loadedAt
	s.mu.Unlock()
	return st
}

// Healthy reports whether Redis answered the last call.
func (s *Shared) Healthy() bool { return s.healthy.Load() }

// Close writes what is queued (within OpTimeout), stops the background
// work and closes the connection New opened.
func (s *Shared) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	<-s.wrote
	s.cancel()
	var err error
	if s.own {
		err = s.rdb.Close() // also ends a read of the stream under way
	}
	s.wg.Wait()
	return err
}

// down marks Redis unreachable, logging the first time.
func (s *Shared) down(err error) {
	if s.ctx.Err() != nil {
		return
	}
	if s.healthy.CompareAndSwap(true, false) {
		s.log.Warn("shared cache: redis unreachable; serving local entries, queueing writes", "prefix", s.cfg.Prefix, "err", err)
	}
}

// up marks Redis reachable. After an outage it logs once, asks the
// follower to load the entries written meanwhile (unless loaded says it
// just did) and the writer to flush.
func (s *Shared) up(loaded bool) {
	if s.healthy.CompareAndSwap(false, true) {
		s.log.Info("shared cache: redis reachable again; resyncing", "prefix", s.cfg.Prefix, "queued", s.q.len())
		if !loaded {
			s.reload.Store(true)
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// pause waits d, false if Close came first.
func (s *Shared) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}
