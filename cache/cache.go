package cache

import (
	"container/list"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragfuse/ragfuse/clock"
)

// Errors returned by the cache.
var (
	// ErrMiss reports that no usable entry answers the question.
	ErrMiss = errors.New("cache: miss")
	// ErrBadVector reports an empty, zero or non-finite vector, one too
	// short to normalize (only subnormal components), or one whose
	// dimension differs from the vectors already stored for the tenant.
	ErrBadVector = errors.New("cache: bad vector")
)

// Config configures a Cache. Zero fields take the defaults written beside
// them.
type Config struct {
	Similarity float64       // least cosine similarity of a hit (less 1e-5 for rounding); default 0.92
	TTL        time.Duration // life of an entry; default 24h
	// Jitter stretches each entry's TTL by a random fraction in [0, Jitter),
	// so entries written together do not expire together; default 0.1,
	// negative for none.
	Jitter     float64
	MaxEntries int // per tenant; the least recently used entry goes first; default 10000
	// MaxTenants bounds the tenants held; beyond it the least recently used
	// tenant (a Get, GetStale or Put is a use) is dropped whole; default 10000.
	MaxTenants int
	// Grace is how long an expired entry is kept for GetStale
	// (stale-if-error); default 1h, negative for none.
	Grace time.Duration
	Clock clock.Clock // read for every expiry decision; default clock.System
	// Replica, if set, is told of every entry Put stores, to share it with
	// other instances (package rediscache builds such a Cache); nil keeps
	// the cache to this process.
	Replica Replica
}

func (c Config) withDefaults() Config {
	if c.Similarity <= 0 || math.IsNaN(c.Similarity) {
		c.Similarity = 0.92
	}
	if c.TTL <= 0 {
		c.TTL = 24 * time.Hour
	}
	switch {
	case c.Jitter == 0 || math.IsNaN(c.Jitter):
		c.Jitter = 0.1
	case c.Jitter < 0:
		c.Jitter = 0
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = 10000
	}
	if c.MaxTenants <= 0 {
		c.MaxTenants = 10000
	}
	switch {
	case c.Grace == 0:
		c.Grace = time.Hour
	case c.Grace < 0:
		c.Grace = 0
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	return c
}

// DocRef names a knowledge-base document an answer was built from.
type DocRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Entry is a cached answer.
type Entry struct {
	Question  string   // the question the answer was written for
	Text      string   // the answer
	Model     string   // the model that wrote it
	Source    string   // the tier source that produced it ("primary")
	Docs      []DocRef // documents it was built from
	KBVersion uint64   // the knowledge-base version it was built on
	Created   time.Time
	Expires   time.Time // set by Put: Created + TTL with jitter
	// Stale is set on an entry returned by GetStale after it expired.
	Stale bool
	// Similarity is the cosine similarity of the lookup that returned the
	// entry (1 for an exact match).
	Similarity float64
}

// Stats counts cache events since New.
type Stats struct {
	Hits, StaleHits, Misses uint64
	GuardRejects            uint64 // similar entries refused by the false-hit guard
	Evictions               uint64 // entries dropped by the per-tenant cap
	Expirations             uint64 // entries dropped after TTL plus grace
	TenantEvictions         uint64 // tenants dropped by MaxTenants
}

// Cache is a semantic cache of answers, partitioned by tenant: each tenant
// has its own exact-match table, vector index and LRU list, and a lookup
// never looks outside its tenant. At most MaxTenants tenants are held, and
// a tenant whose entries are all past their grace is freed. A Cache is safe
// for concurrent use.
type Cache struct {
	cfg Config

	// mu guards the fields below. It is taken before a tenant's mutex,
	// never while one is held.
	mu        sync.Mutex
	tenants   map[string]*tenant
	byUse     *list.List // of *tenant, most recently used first
	nextSweep time.Time  // when to free tenants with nothing left to serve

	hits, staleHits, misses, rejects, evictions, expirations, tenantEvictions atomic.Uint64
}

// New returns an empty Cache.
func New(cfg Config) *Cache {
	return &Cache{cfg: cfg.withDefaults(), tenants: make(map[string]*tenant), byUse: list.New()}
}

// Config returns the configuration in effect, defaults filled in.
func (c *Cache) Config() Config { return c.cfg }

// Get returns the entry of tenant that answers question, whose embedding is
// vec: an exact match of the normalized question, or else the most similar
// entry with cosine similarity >= Similarity that passes the false-hit
// guard. Only fresh entries built on kbVersion qualify. Otherwise it returns
// ErrMiss.
func (c *Cache) Get(tenant, question string, vec []float32, kbVersion uint64) (Entry, error) {
	return c.lookup(tenant, question, vec, kbVersion, false)
}

// GetStale is Get for stale-if-error: it also returns an entry that expired
// less than Grace ago, with Stale set.
func (c *Cache) GetStale(tenant, question string, vec []float32, kbVersion uint64) (Entry, error) {
	return c.lookup(tenant, question, vec, kbVersion, true)
}

func (c *Cache) lookup(name, question string, vec []float32, kbVersion uint64, stale bool) (Entry, error) {
	t := c.find(name, true)
	if t == nil {
		c.misses.Add(1)
		return Entry{}, ErrMiss
	}
	e, ok := t.lookup(question, vec, kbVersion, stale, c.cfg.Clock.Now())
	switch {
	case !ok:
		c.misses.Add(1)
		return Entry{}, ErrMiss
	case e.Stale:
		c.staleHits.Add(1)
	default:
		c.hits.Add(1)
	}
	return e, nil
}

// Put stores e as the answer of tenant to question, whose embedding is vec,
// replacing an entry for the same normalized question. It sets e.Created
// and e.Expires from the clock and the TTL; e.Question defaults to question.
// It evicts the least recently used entries beyond MaxEntries. It returns
// ErrBadVector for an unusable vector. A question that normalizes to ""
// (nothing but punctuation and spaces) is not stored, since it could not be
// told from another such question, and Put returns nil. A stored entry is
// then handed to Config.Replica, with no lock held.
func (c *Cache) Put(tenant, question string, vec []float32, e Entry) error {
	if !usableVector(vec) {
		return ErrBadVector
	}
	key := Normalize(question)
	if key == "" {
		return nil
	}
	now := c.cfg.Clock.Now()
	e.Created = now
	e.Expires = now.Add(c.ttl())
	e, err := c.store(tenant, question, key, vec, e, now, false)
	if err == nil && c.cfg.Replica != nil {
		c.cfg.Replica.Stored(tenant, vec, e)
	}
	return err
}

// store fills in e's question, copies its documents and stores it in
// tenant's partition, made if need be, at now: replacing the entry under
// key, or with newer only when e was created after it (ErrNotNewer). It
// returns the entry as stored. A tenant dropped since it was found takes
// no entries: store retries on the one that replaces it.
func (c *Cache) store(tenant, question, key string, vec []float32, e Entry, now time.Time, newer bool) (Entry, error) {
	e.Stale, e.Similarity = false, 0
	if e.Question == "" {
		e.Question = question
	}
	e.Docs = append([]DocRef(nil), e.Docs...)
	for {
		t := c.create(tenant, now)
		var err error
		if newer {
			err = t.putNewer(question, key, vec, e, now)
		} else {
			err = t.put(question, key, vec, e, now)
		}
		if !errors.Is(err, errTenantGone) {
			return e, err
		}
	}
}

// ttl returns TTL stretched by a random fraction of Jitter.
func (c *Cache) ttl() time.Duration {
	return c.cfg.TTL + time.Duration(rand.Float64()*c.cfg.Jitter*float64(c.cfg.TTL))
}

// usableVector reports whether vec is finite and can be normalized in
// float32: not zero, and not so short (only subnormal components) that the
// scale to unit length overflows to Inf.
func usableVector(vec []float32) bool {
	var ss float64
	for _, f := range vec {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return false
		}
		ss += float64(f) * float64(f)
	}
	return ss > 0 && 1/math.Sqrt(ss) <= math.MaxFloat32
}

// Len returns the number of entries of tenant, expired ones in grace
// included.
func (c *Cache) Len(tenant string) int {
	t := c.find(tenant, false)
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}

// Size returns the number of entries across tenants.
func (c *Cache) Size() int {
	n := 0
	for _, t := range c.snapshot() {
		t.mu.Lock()
		n += t.lru.Len()
		t.mu.Unlock()
	}
	return n
}

// Tenants returns the number of tenants that have a partition.
func (c *Cache) Tenants() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tenants)
}

func (c *Cache) snapshot() []*tenant {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := make([]*tenant, 0, len(c.tenants))
	for _, t := range c.tenants {
		ts = append(ts, t)
	}
	return ts
}

// Invalidate removes every entry not built on knowledge-base version
// current, in all tenants, and returns how many it removed. Call it after a
// knowledge-base reload; Get already ignores such entries, Invalidate frees
// their memory.
func (c *Cache) Invalidate(current uint64) int {
	n := 0
	for _, t := range c.snapshot() {
		n += t.removeIf(func(r *record) bool { return r.entry.KBVersion != current })
	}
	return n
}

// Purge removes every entry of every tenant.
func (c *Cache) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tenants {
		c.dropLocked(t)
	}
}

// Stats returns the event counters.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: c.hits.Load(), StaleHits: c.staleHits.Load(), Misses: c.misses.Load(),
		GuardRejects: c.rejects.Load(), Evictions: c.evictions.Load(),
		Expirations: c.expirations.Load(), TenantEvictions: c.tenantEvictions.Load(),
	}
}

// record is one stored entry.
type record struct {
	key   string // normalized question
	entry Entry
	sig   signature
	pos   int           // position in the tenant's index
	elem  *list.Element // in the tenant's LRU list
	gone  bool          // removed from the index and the list
}
