package cache

import (
	"container/list"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"
)

// candidates is how many nearest entries a lookup considers first; when
// they are all expired, outdated or guard-rejected, it looks at four times as
// many, and so on, so that such entries never hide a good one.
const candidates = 4

// tenant is one tenant's partition of the cache.
type tenant struct {
	c    *Cache // for the configuration and the counters
	name string
	elem *list.Element // in c.byUse; guarded by c.mu

	mu sync.Mutex // guards everything below, and is held by the callbacks of exact
	// exact maps a normalized question to its *record. Its own expiry (in
	// real time, TTL plus grace) only reclaims memory as a backstop: every
	// decision is made with the cache's Clock. Deleting a key from it, or
	// its DeleteExpired, removes the record everywhere (OnEvicted).
	exact     *gocache.Cache
	idx       *index     // nil until the first Put fixes the dimension
	lru       *list.List // of *record, most recently used first
	nextSweep time.Time  // when to drop entries past their grace next
	hits      []hit      // search scratch
	// until is when the last entry put passes its grace: from then on the
	// tenant has nothing left to serve.
	until time.Time
	gone  bool // dropped from the cache: takes no more entries
}

func newTenant(c *Cache, name string) *tenant {
	t := &tenant{c: c, name: name, exact: gocache.New(gocache.NoExpiration, 0), lru: list.New()}
	// Called by exact with t.mu held (every exact call is made under it).
	t.exact.OnEvicted(func(_ string, v any) {
		if r, ok := v.(*record); ok {
			t.drop(r)
		}
	})
	return t
}

// lookup implements Cache.Get and Cache.GetStale. A question whose
// normalized form is empty misses: it cannot be told from another such
// question, so none is stored.
func (t *tenant) lookup(question string, vec []float32, kb uint64, stale bool, now time.Time) (Entry, bool) {
	key := Normalize(question)
	if key == "" {
		return Entry{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone {
		return Entry{}, false
	}
	if v, ok := t.exact.Get(key); ok {
		if r := v.(*record); t.usable(r, kb, stale, now) {
			return t.serve(r, 1, now), true
		}
	}
	if t.idx == nil || len(vec) != t.idx.dim || !usableVector(vec) {
		return Entry{}, false
	}
	var sig *signature
	var seen map[*record]bool // records already judged, once the search widens
	for k := candidates; ; k *= 4 {
		t.hits = t.idx.search(vec, k, float32(t.c.cfg.Similarity), t.hits)
		for _, h := range t.hits {
			if float64(h.sim) < t.c.cfg.Similarity-simEps {
				break
			}
			r := t.idx.ids[h.pos]
			if seen != nil {
				if seen[r] {
					continue
				}
				seen[r] = true
			}
			if !t.usable(r, kb, stale, now) {
				continue
			}
			if sig == nil {
				s := signatureOf(question)
				sig = &s
			}
			if !sig.compatible(r.sig) {
				t.c.rejects.Add(1)
				continue
			}
			return t.serve(r, float64(h.sim), now), true
		}
		// All k nearest were unusable or refused: look further, unless
		// the search already returned every entry above the threshold.
		if len(t.hits) < k || k >= t.idx.len() {
			return Entry{}, false
		}
		if seen == nil {
			seen = make(map[*record]bool, 4*k)
			for _, h := range t.hits {
				seen[t.idx.ids[h.pos]] = true
			}
		}
	}
}

// usable reports whether r may answer: built on kb, and fresh (or, with
// stale, within its grace period).
func (t *tenant) usable(r *record, kb uint64, stale bool, now time.Time) bool {
	if r.entry.KBVersion != kb {
		return false
	}
	if now.Before(r.entry.Expires) {
		return true
	}
	return stale && now.Before(r.entry.Expires.Add(t.c.cfg.Grace))
}

// serve marks r recently used and returns a copy of its entry.
func (t *tenant) serve(r *record, sim float64, now time.Time) Entry {
	t.lru.MoveToFront(r.elem)
	e := r.entry
	e.Docs = append([]DocRef(nil), e.Docs...)
	e.Similarity = min(sim, 1)
	e.Stale = !now.Before(e.Expires)
	return e
}

// put stores e for question under key (its normalized form), replacing the
// entry of the same key. It returns errTenantGone once t is retired.
func (t *tenant) put(question, key string, vec []float32, e Entry, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.putLocked(question, key, vec, e, now)
}

// putNewer is put for an entry restored from another instance: it keeps
// the entry under key when that one was created at or after e.
func (t *tenant) putNewer(question, key string, vec []float32, e Entry, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.exact.Get(key); ok && !t.gone && !e.Created.After(v.(*record).entry.Created) {
		return ErrNotNewer
	}
	return t.putLocked(question, key, vec, e, now)
}

// putLocked implements put; it requires t.mu.
func (t *tenant) putLocked(question, key string, vec []float32, e Entry, now time.Time) error {
	if t.gone {
		return errTenantGone
	}
	if t.idx == nil {
		t.idx = newIndex(len(vec))
	}
	if len(vec) != t.idx.dim {
		return ErrBadVector
	}
	if !now.Before(t.nextSweep) {
		t.sweep(now)
	}
	t.exact.Delete(key) // drops the record it replaces, through OnEvicted
	r := &record{key: key, entry: e, sig: signatureOf(question)}
	t.idx.add(r, vec)
	r.elem = t.lru.PushFront(r)
	t.exact.Set(key, r, e.Expires.Add(t.c.cfg.Grace).Sub(now))
	if end := e.Expires.Add(t.c.cfg.Grace); end.After(t.until) {
		t.until = end
	}
	for t.lru.Len() > t.c.cfg.MaxEntries {
		t.remove(t.lru.Back().Value.(*record))
		t.c.evictions.Add(1)
	}
	return nil
}

// sweep drops every entry past its grace period; it runs at most once per
// sweepEvery of clock time, from put.
func (t *tenant) sweep(now time.Time) {
	t.nextSweep = now.Add(t.c.sweepEvery())
	// With a clock that follows real time, exact's own expiry drops most of
	// these entries first: count them too.
	before := t.lru.Len()
	t.exact.DeleteExpired()
	t.removeLocked(func(r *record) bool {
		return !now.Before(r.entry.Expires.Add(t.c.cfg.Grace))
	})
	t.c.expirations.Add(uint64(before - t.lru.Len()))
}

// retire marks t dropped, so that a put still holding it retries on its
// successor.
func (t *tenant) retire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = true
}

// retireIfIdle retires t if it has nothing left to serve at now (no entry,
// or every entry past its grace) and returns how many entries it held.
func (t *tenant) retireIfIdle(now time.Time) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.lru.Len()
	if n > 0 && now.Before(t.until) {
		return 0, false
	}
	t.gone = true
	return n, true
}

// removeIf removes the records for which drop returns true.
func (t *tenant) removeIf(drop func(*record) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(drop)
}

func (t *tenant) removeLocked(drop func(*record) bool) int {
	var doomed []*record
	for e := t.lru.Front(); e != nil; e = e.Next() {
		if r := e.Value.(*record); drop(r) {
			doomed = append(doomed, r)
		}
	}
	for _, r := range doomed {
		t.remove(r)
	}
	return len(doomed)
}

// remove deletes r from the exact table, the index and the LRU list.
func (t *tenant) remove(r *record) {
	if r.gone {
		return
	}
	// A live record is always the one exact holds for its key: put deletes
	// the key before storing a new record under it.
	t.exact.Delete(r.key) // calls drop
	t.drop(r)
}

// drop deletes r from the index and the LRU list, once.
func (t *tenant) drop(r *record) {
	if r.gone {
		return
	}
	r.gone = true
	t.idx.remove(r.pos)
	t.lru.Remove(r.elem)
}
