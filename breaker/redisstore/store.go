package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/breaker"
)

// ErrUnavailable reports that Redis could not be reached (or did not answer
// within Config.OpTimeout). Callers fall back to local state.
var ErrUnavailable = errors.New("redisstore: redis unavailable")

// Store is a breaker.Store sharing breaker state through Redis. It is safe
// for concurrent use. Breakers created with it attach to it automatically
// (it is a breaker.Attacher). Call Close when done.
type Store struct {
	cfg     Config
	rdb     redis.UniversalClient
	own     bool // rdb was made by New: Close closes it
	ps      *redis.PubSub
	log     *slog.Logger
	channel string

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // buffered 1: asks the worker for a cycle now
	closed atomic.Bool

	names atomic.Pointer[map[string]*entry] // copy on write under mu; read lock-free by Record

	healthy    atomic.Bool
	subscribed chan struct{} // closed on the first subscription

	mu        sync.Mutex // guards the fields below and every entry's breakers
	outbox    map[string]breaker.Shared
	resync    map[string]bool
	resyncAll bool

	cl cluster // shared cooldowns and reloads (cluster.go)
}

// entry is one breaker name known to the store.
type entry struct {
	name string

	// Outcomes recorded since the last flush. Every outcome is a call,
	// so calls takes the most writes and is striped.
	calls          striped
	failures, slow atomic.Int64

	sentInflight int64 // calls in flight this instance last wrote; the worker's alone

	cfg      breaker.Config // of the first breaker attached
	width    time.Duration  // aggregate bucket width
	buckets  int            // aggregate buckets
	breakers []*breaker.Breaker
}

var (
	_ breaker.Store    = (*Store)(nil)
	_ breaker.Attacher = (*Store)(nil)
	_ breaker.Binder   = (*Store)(nil)
	_ breaker.Recorder = (*entry)(nil)
)

// New returns a Store connected to Redis. It fails only on a bad
// configuration; an unreachable Redis leaves the store unhealthy, serving
// local state, until it can be reached.
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	s := &Store{
		cfg:        cfg,
		rdb:        cfg.Client,
		log:        cfg.Logger,
		channel:    cfg.Prefix + ":breaker:events",
		wake:       make(chan struct{}, 1),
		subscribed: make(chan struct{}),
		outbox:     map[string]breaker.Shared{},
		resync:     map[string]bool{},
		cl:         cluster{coolOut: map[string]time.Time{}, reloadWake: make(chan struct{}, 1)},
	}
	if s.rdb == nil {
		if cfg.URL == "" {
			return nil, errors.New("redisstore: no Client and no URL")
		}
		opt, err := redis.ParseURL(cfg.URL)
		if err != nil {
			// The URL may hold a password: never repeat it.
			return nil, errors.New("redisstore: invalid redis URL")
		}
		opt.ContextTimeoutEnabled = true
		s.rdb = redis.NewClient(opt)
		s.own = true
	}
	s.names.Store(&map[string]*entry{})
	s.ctx, s.cancel = context.WithCancel(context.Background())

	ctx, cancel := context.WithTimeout(s.ctx, cfg.OpTimeout)
	err := s.rdb.Ping(ctx).Err()
	cancel()
	s.healthy.Store(true)
	if err != nil {
		s.down(err)
	}
	ctx, cancel = context.WithTimeout(s.ctx, cfg.OpTimeout)
	s.ps = s.rdb.Subscribe(ctx, s.channel, s.coolChannel(), s.kbChannel())
	cancel()
	s.wg.Add(3)
	go s.subscriber()
	go s.worker()
	go s.reloader()
	if err == nil {
		select {
		case <-s.subscribed:
		case <-time.After(cfg.StartTimeout):
		}
	}
	return s, nil
}

// Instance returns the identifier of this process in the cluster.
func (s *Store) Instance() string { return s.cfg.Instance }

// Prefix returns the key namespace.
func (s *Store) Prefix() string { return s.cfg.Prefix }

// Healthy reports whether the last Redis call succeeded.
func (s *Store) Healthy() bool { return s.healthy.Load() }

// Close stops the store's goroutines, after one last attempt (bounded by
// OpTimeout) to send pending announcements, and closes the Redis
// connection if New made it. Breakers still using the store keep working
// on local state. Close is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	err := s.ps.Close()
	s.wg.Wait()
	if s.own {
		err = errors.Join(err, s.rdb.Close())
	}
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

// Attach adds b to the breakers that hear announcements for its name and
// schedules a read of its shared state. Attaching a breaker twice has no
// further effect. The first breaker attached under a name fixes the
// thresholds and window of that name's cluster-wide aggregate.
func (s *Store) Attach(b *breaker.Breaker) {
	name := b.Name()
	s.mu.Lock()
	e := s.entryLocked(name, b.Config())
	if !slices.Contains(e.breakers, b) {
		e.breakers = append(e.breakers, b)
	}
	s.resync[name] = true
	s.mu.Unlock()
	s.signal()
}

// Bind implements breaker.Binder: b's CLOSED outcomes go straight to the
// counters of its name, with no lookup on the hot path.
func (s *Store) Bind(b *breaker.Breaker) breaker.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entryLocked(b.Name(), b.Config())
}

// entryLocked returns the entry of name, creating it with bc if there is
// none. s.mu must be held.
func (s *Store) entryLocked(name string, bc breaker.Config) *entry {
	names := *s.names.Load()
	e := names[name]
	if e == nil {
		e = s.newEntry(name, bc)
		next := maps.Clone(names)
		next[name] = e
		s.names.Store(&next)
	}
	return e
}

// Detach removes b; it hears no more announcements. The counters of its
// name stay, for breakers bound to them.
func (s *Store) Detach(b *breaker.Breaker) {
	name := b.Name()
	s.mu.Lock()
	defer s.mu.Unlock()
	names := *s.names.Load()
	e := names[name]
	if e == nil {
		return
	}
	e.breakers = slices.DeleteFunc(e.breakers, func(x *breaker.Breaker) bool { return x == b })
}

func (s *Store) newEntry(name string, bc breaker.Config) *entry {
	e := &entry{name: name, cfg: bc, calls: newStriped()}
	d, n := s.cfg.Window, s.cfg.WindowBuckets
	if bc.WindowDuration > 0 {
		d, n = bc.WindowDuration, bc.WindowBuckets
	}
	n = max(1, min(n, maxBuckets, int(d/minBucketWidth)))
	e.width = max(d/time.Duration(n), minBucketWidth)
	e.buckets = n
	return e
}

// lookup returns the entry of name, or nil.
func (s *Store) lookup(name string) *entry { return (*s.names.Load())[name] }

// targets returns the breakers attached under name.
func (s *Store) targets(e *entry) []*breaker.Breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(e.breakers)
}

// Publish records sh as the shared state of name, hands it at once to the
// other breakers of that name in this process, and leaves the write to
// Redis and the notification of other processes to the background
// worker. It never blocks on Redis.
//
// HALF_OPEN stays in this process: every process turns half-open by itself
// when the shared open time ends, and a HALF_OPEN announcement overtaken by
// the OPEN of a failed probe would end that new open time early.
func (s *Store) Publish(name string, sh breaker.Shared) {
	e := s.lookup(name)
	s.mu.Lock()
	if sh.State != breaker.StateHalfOpen {
		s.outbox[name] = sh
	}
	var targets []*breaker.Breaker
	if e != nil {
		targets = slices.Clone(e.breakers)
	}
	s.mu.Unlock()
	if e != nil { // outcomes of the period that ended count no more
		e.calls.Swap()
		e.failures.Store(0)
		e.slow.Store(0)
	}
	for _, b := range targets {
		b.Apply(sh)
	}
	s.signal()
}

// Record counts one CLOSED outcome of name in local counters that the
// worker adds to the cluster-wide aggregate every FlushInterval. It takes
// no lock, does not allocate and never touches Redis. Outcomes of names no
// breaker was ever attached under are dropped.
func (s *Store) Record(name string, o breaker.Outcome, slow bool) {
	if o >= breaker.Ignored {
		return
	}
	if e := (*s.names.Load())[name]; e != nil {
		e.Record(o, slow)
	}
}

// Record implements breaker.Recorder for the breakers bound to e.
func (e *entry) Record(o breaker.Outcome, slow bool) {
	if o >= breaker.Ignored {
		return
	}
	e.calls.Add()
	if o == breaker.Failure {
		e.failures.Add(1)
	} else if slow {
		e.slow.Add(1)
	}
}

// AcquireProbe takes the cluster-wide probe lease of name for lease with
// SET NX PX, bounded by OpTimeout. While Redis is unreachable it answers
// true without a call, so that each process probes on its own.
func (s *Store) AcquireProbe(name string, lease time.Duration) bool {
	if !s.healthy.Load() || s.closed.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	defer cancel()
	ok, err := s.rdb.SetNX(ctx, s.probeKey(name), s.cfg.Instance, max(lease, time.Millisecond)).Result()
	if err != nil {
		s.down(err)
		return true
	}
	return ok
}

// signal asks the worker for a cycle without waiting for its ticker.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// down marks Redis unreachable, logging the first failure of an outage.
func (s *Store) down(err error) {
	if s.closed.Load() {
		return
	}
	if s.healthy.Swap(false) {
		s.log.Warn("redisstore: redis unreachable; breakers use local state",
			"prefix", s.cfg.Prefix, "err", err.Error())
	}
}

// up marks Redis reachable again, logging the end of an outage and
// scheduling a resync of every attached breaker.
func (s *Store) up() {
	if !s.healthy.Swap(true) {
		s.log.Info("redisstore: redis reachable again; resyncing", "prefix", s.cfg.Prefix)
		s.mu.Lock()
		s.resyncAll = true
		s.mu.Unlock()
		s.rejoin()
	}
}

func (s *Store) stateKey(name string) string { return s.cfg.Prefix + ":breaker:" + name + ":state" }
func (s *Store) probeKey(name string) string { return s.cfg.Prefix + ":breaker:" + name + ":probe" }
