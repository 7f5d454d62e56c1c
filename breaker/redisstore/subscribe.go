package redisstore

import (
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/breaker"
)

// subscriber applies the announcements of other processes to the attached
// breakers, and schedules a resync on every (re)subscription, since
// announcements may have been missed while unsubscribed. go-redis
// reconnects and subscribes again by itself; after an error the loop waits
// RetryInterval before receiving again.
func (s *Store) subscriber() {
	defer s.wg.Done()
	first := true
	for {
		msg, err := s.ps.Receive(s.ctx)
		if s.ctx.Err() != nil {
			return
		}
		if err != nil {
			s.down(err)
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(s.cfg.RetryInterval):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			if first {
				first = false
				close(s.subscribed)
			}
			s.mu.Lock()
			s.resyncAll = true
			s.mu.Unlock()
			s.rejoin()
			s.signal()
		case *redis.Message:
			switch m.Channel {
			case s.channel:
				s.receive([]byte(m.Payload))
			case s.coolChannel():
				s.receiveCooldown([]byte(m.Payload), false)
			case s.kbChannel():
				s.receiveReload([]byte(m.Payload))
			}
		}
	}
}

// receive applies one announcement from another process.
func (s *Store) receive(payload []byte) {
	name, sh, inst, ok := decode(payload)
	if !ok || inst == s.cfg.Instance { // this process's own: already delivered by Publish
		return
	}
	e := s.lookup(name)
	if e == nil {
		return
	}
	for _, b := range s.targets(e) {
		b.Apply(sh)
	}
}

// wire is the JSON form of an announcement and of a stored shared state.
type wire struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	OpenUntil time.Time `json:"open_until,omitzero"`
	Origin    uint64    `json:"origin,omitempty"`
	Instance  string    `json:"instance"`
}

// encode returns the announcement of sh for breaker name by instance.
func encode(name string, sh breaker.Shared, instance string) []byte {
	b, _ := json.Marshal(wire{
		Name:      name,
		State:     sh.State.String(),
		OpenUntil: sh.OpenUntil.Round(0),
		Origin:    sh.Origin,
		Instance:  instance,
	})
	return b
}

// decode parses an announcement; ok is false for anything malformed.
func decode(p []byte) (name string, sh breaker.Shared, instance string, ok bool) {
	var w wire
	if err := json.Unmarshal(p, &w); err != nil || w.Name == "" {
		return "", breaker.Shared{}, "", false
	}
	switch w.State {
	case breaker.StateClosed.String():
		sh.State = breaker.StateClosed
	case breaker.StateHalfOpen.String():
		sh.State = breaker.StateHalfOpen
	case breaker.StateOpen.String():
		sh.State = breaker.StateOpen
		sh.OpenUntil = w.OpenUntil
	default:
		return "", breaker.Shared{}, "", false
	}
	sh.Origin = w.Origin
	return w.Name, sh, w.Instance, true
}
