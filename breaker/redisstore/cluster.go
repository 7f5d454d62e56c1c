package redisstore

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Member is what one instance of the cluster reports of its knowledge
// base: the version it serves (a count of its own loads), the digest of
// its documents (equal on instances holding the same files), the reload it
// ran last and when it reported.
type Member struct {
	Instance string    `json:"instance"`
	Version  uint64    `json:"version"`
	Digest   string    `json:"digest,omitempty"`
	ReloadID string    `json:"reload_id,omitempty"` // the last cluster-wide reload it ran
	Error    string    `json:"error,omitempty"`     // why that reload failed, if it did
	At       time.Time `json:"at"`
}

// cluster is the store's share of cooldowns and reloads.
type cluster struct {
	mu        sync.Mutex           // guards the fields below
	coolOut   map[string]time.Time // cooldowns to write and announce, latest per model; zero: ended
	coolSync  bool                 // read the live cooldowns at the next cycle
	onCool    func(model string, until time.Time)
	onReload  func(id string)
	reloadID  string // the last reload another instance asked for, not yet run
	member    Member // this instance, as last reported
	hasMember bool
	memberDue bool      // write member at the next cycle
	lastBeat  time.Time // when member was last written (system time)

	reloadWake chan struct{} // buffered 1: a reload is waiting
}

// clusterWork is what one cluster cycle sends and reads.
type clusterWork struct {
	cool   map[string]time.Time
	sync   bool
	member *Member
}

// ShareCooldown announces that model cools down until until, an absolute
// time (zero: its cooldown ended, as after a breaker reset). The worker
// writes <prefix>:cooldown:<model> (expiring at until; an end expires
// after StateTTL), lists model in the set <prefix>:cooldowns and
// PUBLISHes it on <prefix>:cooldown:events; the other instances hand it
// to their OnCooldown function. It never blocks on Redis: while Redis is
// unreachable the latest announcement per model waits for its return.
func (s *Store) ShareCooldown(model string, until time.Time) {
	s.cl.mu.Lock()
	s.cl.coolOut[model] = until
	s.cl.mu.Unlock()
	s.signal()
}

// OnCooldown sets the function that hears the cooldowns other instances
// announce (a zero until: ended), and the stored ones (live cooldowns and
// ends) read from Redis on every (re)subscription and after an outage; it schedules such a read
// now. fn is called from the store's goroutines, never with a lock held,
// and must not block.
func (s *Store) OnCooldown(fn func(model string, until time.Time)) {
	s.cl.mu.Lock()
	s.cl.onCool, s.cl.coolSync = fn, true
	s.cl.mu.Unlock()
	s.signal()
}

// OnReload sets the function run when another instance asks for a
// knowledge-base reload (RequestReload), with the request's id. It runs
// on a goroutine of the store, one reload at a time; requests arriving
// while one runs are folded into one more run.
func (s *Store) OnReload(fn func(id string)) {
	s.cl.mu.Lock()
	s.cl.onReload = fn
	s.cl.mu.Unlock()
}

// RequestReload asks every other instance to reload its knowledge base
// (PUBLISH on <prefix>:kb:events), bounded by OpTimeout. It fails with
// ErrUnavailable when Redis cannot be reached.
func (s *Store) RequestReload(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	msg, _ := json.Marshal(reloadWire{ID: id, Instance: s.cfg.Instance})
	if err := s.rdb.Publish(ctx, s.kbChannel(), msg).Err(); err != nil {
		s.down(err)
		return ErrUnavailable
	}
	return nil
}

// SetMember records m as this instance's state (its Instance is set to
// the store's). The worker writes it at once under
// <prefix>:kb:member:<instance>, listed in the set <prefix>:kb:members,
// and writes it again every MemberTTL/3; the key expires after MemberTTL,
// so an instance that stops is dropped from Members soon after.
func (s *Store) SetMember(m Member) {
	m.Instance = s.cfg.Instance
	s.cl.mu.Lock()
	s.cl.member, s.cl.hasMember, s.cl.memberDue = m, true, true
	s.cl.mu.Unlock()
	s.signal()
}

// Members returns the live instances' states, by instance, bounded by
// OpTimeout. It fails with ErrUnavailable when Redis cannot be reached.
func (s *Store) Members(ctx context.Context) ([]Member, error) {
	if !s.healthy.Load() || s.closed.Load() {
		return nil, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	ids, err := s.rdb.SMembers(ctx, s.memberIndex()).Result()
	if err != nil {
		s.down(err)
		return nil, ErrUnavailable
	}
	vals, err := s.values(ctx, ids, s.memberKey, s.memberIndex())
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, v := range vals {
		var m Member
		if json.Unmarshal([]byte(v), &m) == nil && m.Instance != "" {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Instance, b.Instance) })
	return out, nil
}

// values reads the keys of names (key(name)) in one MGET and removes
// from the set index the names whose key expired.
func (s *Store) values(ctx context.Context, names []string, key func(string) string, index string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = key(n)
	}
	got, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		s.down(err)
		return nil, ErrUnavailable
	}
	var out []string
	var gone []any
	for i, v := range got {
		if str, ok := v.(string); ok {
			out = append(out, str)
		} else {
			gone = append(gone, names[i])
		}
	}
	if len(gone) > 0 {
		_ = s.rdb.SRem(ctx, index, gone...).Err() // tidying only: a failure leaves them for the next read
	}
	return out, nil
}

// clusterCycle makes the round trip of the cluster's work, if there is
// any: write and announce the waiting cooldowns, write this instance's
// state when due, and read the live cooldowns when a resync is due.
func (s *Store) clusterCycle(parent context.Context) {
	// The heartbeat runs on system time, not s.cfg.Clock: the member key
	// it renews expires on Redis's time (MemberTTL), which a clock moved
	// by hand, or standing still, does not follow.
	w := s.takeCluster(time.Now())
	if len(w.cool) == 0 && !w.sync && w.member == nil {
		return
	}
	ctx, cancel := context.WithTimeout(parent, s.cfg.OpTimeout)
	defer cancel()
	now := s.cfg.Clock.Now()
	var live *redis.StringSliceCmd
	cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for model, until := range w.cool {
			msg, _ := json.Marshal(coolWire{Model: model, Until: until.Round(0), Instance: s.cfg.Instance})
			ttl := until.Sub(now)
			if until.IsZero() {
				// The end stays readable (for StateTTL, unless a new
				// cooldown replaces it), so that an instance that missed
				// the announcement ends its cooldown at its next resync.
				ttl = s.cfg.StateTTL
			} else if ttl <= 0 {
				continue // over already: nothing to share
			}
			p.Set(ctx, s.cooldownKey(model), msg, max(ttl, time.Millisecond))
			p.SAdd(ctx, s.cooldownIndex(), model)
			p.Publish(ctx, s.coolChannel(), msg)
		}
		if w.member != nil {
			msg, _ := json.Marshal(*w.member)
			p.Set(ctx, s.memberKey(w.member.Instance), msg, s.cfg.MemberTTL)
			p.SAdd(ctx, s.memberIndex(), w.member.Instance)
		}
		if w.sync {
			live = p.SMembers(ctx, s.cooldownIndex())
		}
		return nil
	})
	if err := firstErr(cmds); err != nil {
		s.down(err)
		s.requeueCluster(w)
		return
	}
	if live != nil {
		vals, err := s.values(ctx, live.Val(), s.cooldownKey, s.cooldownIndex())
		if err != nil {
			s.requeueCluster(clusterWork{sync: true})
			return
		}
		for _, v := range vals {
			s.receiveCooldown([]byte(v), true)
		}
	}
}

// takeCluster takes the cluster's work of this cycle at system time now.
func (s *Store) takeCluster(now time.Time) clusterWork {
	c := &s.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	var w clusterWork
	if len(c.coolOut) > 0 {
		w.cool, c.coolOut = c.coolOut, map[string]time.Time{}
	}
	w.sync, c.coolSync = c.coolSync, false
	if c.hasMember && (c.memberDue || now.Sub(c.lastBeat) >= s.cfg.MemberTTL/3) {
		m := c.member
		w.member, c.memberDue, c.lastBeat = &m, false, now
	}
	return w
}

// requeueCluster puts back what a failed cluster cycle did not send.
func (s *Store) requeueCluster(w clusterWork) {
	c := &s.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	for model, until := range w.cool {
		if _, newer := c.coolOut[model]; !newer {
			c.coolOut[model] = until
		}
	}
	c.coolSync = c.coolSync || w.sync
	c.memberDue = c.memberDue || w.member != nil
}

// rejoin schedules, after an outage or a resubscription, a read of the
// live cooldowns and a write of this instance's state.
func (s *Store) rejoin() {
	s.cl.mu.Lock()
	s.cl.coolSync, s.cl.memberDue = true, true
	s.cl.mu.Unlock()
}

// leave removes this instance from the members, bounded by OpTimeout.
func (s *Store) leave() {
	s.cl.mu.Lock()
	has := s.cl.hasMember
	s.cl.mu.Unlock()
	if !has {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.memberKey(s.cfg.Instance))
		p.SRem(ctx, s.memberIndex(), s.cfg.Instance)
		return nil
	})
}

// coolWire is the JSON form of a cooldown announcement and stored key.
type coolWire struct {
	Model    string    `json:"model"`
	Until    time.Time `json:"until,omitzero"` // zero: ended
	Instance string    `json:"instance"`
}

// reloadWire is the JSON form of a reload request.
type reloadWire struct {
	ID       string `json:"id"`
	Instance string `json:"instance"`
}

// receiveCooldown hands a cooldown to the OnCooldown function: one
// announced by another instance, or one read at a resync (stored, which
// may be this instance's own).
func (s *Store) receiveCooldown(payload []byte, stored bool) {
	var w coolWire
	if json.Unmarshal(payload, &w) != nil || w.Model == "" || (!stored && w.Instance == s.cfg.Instance) {
		return
	}
	s.cl.mu.Lock()
	fn := s.cl.onCool
	s.cl.mu.Unlock()
	if fn != nil {
		fn(w.Model, w.Until)
	}
}

// receiveReload wakes the reloader for a request of another instance.
func (s *Store) receiveReload(payload []byte) {
	var w reloadWire
	if json.Unmarshal(payload, &w) != nil || w.ID == "" || w.Instance == s.cfg.Instance {
		return
	}
	s.cl.mu.Lock()
	s.cl.reloadID = w.ID
	s.cl.mu.Unlock()
	select {
	case s.cl.reloadWake <- struct{}{}:
	default:
	}
}

// reloader runs the reloads other instances ask for, one at a time.
func (s *Store) reloader() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.cl.reloadWake:
		}
		s.cl.mu.Lock()
		id, fn := s.cl.reloadID, s.cl.onReload
		s.cl.reloadID = ""
		s.cl.mu.Unlock()
		if fn != nil && id != "" {
			fn(id)
		}
	}
}

func (s *Store) coolChannel() string             { return s.cfg.Prefix + ":cooldown:events" }
func (s *Store) cooldownKey(model string) string { return s.cfg.Prefix + ":cooldown:" + model }
func (s *Store) cooldownIndex() string           { return s.cfg.Prefix + ":cooldowns" }
func (s *Store) kbChannel() string               { return s.cfg.Prefix + ":kb:events" }
func (s *Store) memberKey(inst string) string    { return s.cfg.Prefix + ":kb:member:" + inst }
func (s *Store) memberIndex() string             { return s.cfg.Prefix + ":kb:members" }
