package cache

import (
	"errors"
	"time"
)

// ErrExpired reports an entry given to Restore that is already past its
// grace period.
var ErrExpired = errors.New("cache: entry past its grace")

// ErrNotNewer reports an entry given to Restore that is no newer than the
// one held for the same question, which stays.
var ErrNotNewer = errors.New("cache: a newer entry is held")

// Replica shares the entries of a Cache with other instances (Config.Replica).
type Replica interface {
	// Stored is called after Put stored e (Created, Expires and Question
	// set) for tenant, whose question embeds as vec, with no lock held.
	// It must not block nor modify vec or e.Docs.
	Stored(tenant string, vec []float32, e Entry)
	// ShareStatus reports how the sharing goes.
	ShareStatus() ShareStatus
}

// ShareStatus reports how a Replica shares a cache with other instances,
// as GET /v1/status shows it.
type ShareStatus struct {
	Kind     string    `json:"kind"`    // where entries are shared: "redis"
	Healthy  bool      `json:"healthy"` // the shared store answers
	Loading  bool      `json:"loading"` // a load of the live entries is under way
	Loads    int       `json:"loads"`   // loads begun: at start, after an outage, after falling behind
	Loaded   int       `json:"loaded"`  // entries the last finished load stored
	LoadedAt time.Time `json:"loaded_at,omitzero"`
	Queued   int       `json:"queued"`   // entries waiting to be written
	Dropped  uint64    `json:"dropped"`  // entries never written: the queue was full, the oldest went
	Written  uint64    `json:"written"`  // entries written to the shared store
	Received uint64    `json:"received"` // entries of other instances stored here (not those older than one held)
	Seen     uint64    `json:"seen"`     // entries of other instances read, stored or not (a newer one may be held)
}

// ShareStatus returns the status of Config.Replica, false without one.
func (c *Cache) ShareStatus() (ShareStatus, bool) {
	if c.cfg.Replica == nil {
		return ShareStatus{}, false
	}
	return c.cfg.Replica.ShareStatus(), true
}

// Restore stores e, an entry another instance stored with Put, as the
// answer of tenant to question, whose embedding is vec, keeping its Created
// and Expires. An entry already held for the same normalized question and
// created at or after e stays (ErrNotNewer). Restore does not tell
// Config.Replica. It returns ErrExpired for an entry past its grace and
// ErrBadVector for an unusable vector; a question that normalizes to "" is
// not stored.
func (c *Cache) Restore(tenant, question string, vec []float32, e Entry) error {
	if !usableVector(vec) {
		return ErrBadVector
	}
	key := Normalize(question)
	if key == "" {
		return nil
	}
	now := c.cfg.Clock.Now()
	if !now.Before(e.Expires.Add(c.cfg.Grace)) {
		return ErrExpired
	}
	_, err := c.store(tenant, question, key, vec, e, now, true)
	return err
}
