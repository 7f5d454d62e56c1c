package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Cluster shares a pipeline's cooldowns and knowledge-base reloads with
// the other instances of a cluster; config wires the Redis store of
// redis.url through it. Implementations must be safe for concurrent use.
//
// A cooldown that starts (or grows) is announced with its absolute
// until-time and EndCooldown announces its end; ApplyCooldown takes the
// others' without announcing them again, so every instance skips the model
// until the same instant. ReloadCluster reloads here, asks the others to
// reload and waits, up to its context's end, until every live instance
// reports that reload (ClusterReload.Complete); ReloadFromCluster runs a
// reload asked elsewhere; ClusterStatus lists the instances' versions and
// digests.
type Cluster interface {
	// ShareCooldown announces that model cools down until until, an
	// absolute time (zero: its cooldown ended). It must not block.
	ShareCooldown(model string, until time.Time)
	// ShareReload records self, this instance's state after it ran the
	// reload self.ReloadID, and asks every other instance to run it.
	ShareReload(ctx context.Context, self Member) error
	// Members returns the live instances' latest states, this one's
	// included, in a stable order.
	Members(ctx context.Context) ([]Member, error)
}

// Member is one instance's knowledge base as the cluster sees it.
type Member struct {
	Instance string    `json:"instance"`
	Self     bool      `json:"self"`             // the instance answering
	Version  uint64    `json:"version"`          // counts that instance's own loads
	Digest   string    `json:"digest,omitempty"` // equal on instances serving the same documents
	ReloadID string    `json:"reload_id,omitempty"`
	Error    string    `json:"error,omitempty"` // why its last reload failed: it serves the previous version
	At       time.Time `json:"at"`              // when it loaded or reloaded last
}

// ClusterStatus is what the instances of a cluster report of their
// knowledge bases.
type ClusterStatus struct {
	Instances []Member `json:"instances"`
	// Agree is true when every live instance serves the same documents
	// (one digest) and none failed its last reload.
	Agree bool   `json:"agree"`
	Error string `json:"error,omitempty"` // the states could not be read (Redis unreachable)
}

// ClusterReload is the outcome of ReloadCluster.
type ClusterReload struct {
	ID       string   `json:"reload_id,omitempty"` // empty without a cluster
	Previous uint64   `json:"previous_version"`
	Version  uint64   `json:"version"`
	Digest   string   `json:"digest,omitempty"`
	Members  []Member `json:"instances,omitempty"`
	// Complete is true when every live instance reported this reload
	// before ReloadCluster returned.
	Complete bool   `json:"complete"`
	Error    string `json:"cluster_error,omitempty"` // the cluster could not be reached: only this instance reloaded
}

// digester is a knowledge base that hashes its documents
// (retrieval.KnowledgeBase.Digest).
type digester interface{ Digest() string }

// clusterPoll is how often ReloadCluster reads the instances' states.
const clusterPoll = 20 * time.Millisecond

// ReloadCluster reloads the knowledge base here and, with Options.Cluster,
// asks every other instance to reload too, then waits until every live
// instance has reported that reload or ctx is done, whichever comes
// first; the answer says which. A local failure is returned as by
// ReloadKnowledgeBase, and nothing is asked of the others.
func (p *Pipeline) ReloadCluster(ctx context.Context) (ClusterReload, error) {
	var r ClusterReload
	if p.kb != nil {
		r.Previous = p.kb.Version()
	}
	if err := p.ReloadKnowledgeBase(); err != nil {
		return r, err
	}
	self := p.KnowledgeBaseState("", nil)
	r.Version, r.Digest, r.Complete = self.Version, self.Digest, true
	if p.cluster == nil {
		return r, nil
	}
	r.ID = newReloadID()
	self.ReloadID = r.ID
	if err := p.cluster.ShareReload(ctx, self); err != nil {
		r.Complete, r.Error = false, err.Error()
		return r, nil
	}
	tick := time.NewTicker(clusterPoll) // the others' progress runs on real time
	defer tick.Stop()
	for {
		ms, err := p.cluster.Members(ctx)
		if err == nil {
			r.Members, r.Error = ms, ""
			if r.Complete = allRan(ms, r.ID); r.Complete {
				return r, nil
			}
		} else {
			r.Complete, r.Error = false, err.Error()
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-tick.C:
		}
	}
}

// allRan reports whether every instance of ms reported reload id.
func allRan(ms []Member, id string) bool {
	for _, m := range ms {
		if m.ReloadID != id {
			return false
		}
	}
	return len(ms) > 0
}

// ReloadFromCluster runs the reload id another instance asked for and
// returns this instance's state after it, the reload's failure included.
func (p *Pipeline) ReloadFromCluster(id string) Member {
	return p.KnowledgeBaseState(id, p.ReloadKnowledgeBase())
}

// KnowledgeBaseState returns this instance's knowledge-base state after
// the reload id (empty: none), err being the reload's failure, if any.
func (p *Pipeline) KnowledgeBaseState(id string, err error) Member {
	m := Member{Self: true, ReloadID: id, At: p.clock.Now()}
	if p.kb != nil {
		m.Version = p.kb.Version()
		if d, ok := p.kb.(digester); ok {
			m.Digest = d.Digest()
		}
	}
	if err != nil {
		m.Error = err.Error()
	}
	return m
}

// ClusterStatus returns the live instances' knowledge-base states, read
// from the cluster (bounded by its own timeout), or nil without
// Options.Cluster. It is meant for an operator's status page, not for a
// question's path.
func (p *Pipeline) ClusterStatus(ctx context.Context) *ClusterStatus {
	if p.cluster == nil {
		return nil
	}
	ms, err := p.cluster.Members(ctx)
	if err != nil {
		return &ClusterStatus{Instances: []Member{}, Error: err.Error()}
	}
	st := &ClusterStatus{Instances: ms, Agree: len(ms) > 0}
	for _, m := range ms {
		if m.Digest != ms[0].Digest || m.Error != "" {
			st.Agree = false
		}
	}
	if st.Instances == nil {
		st.Instances = []Member{}
	}
	return st
}

// ApplyCooldown applies a cooldown another instance announced: model is
// skipped until until (zero: its cooldown ends now). It is not announced
// again.
func (p *Pipeline) ApplyCooldown(model string, until time.Time) {
	if until.IsZero() {
		p.cool.end(model, p.clock.Now())
		return
	}
	p.cool.set(model, until)
}

// newReloadID returns a random reload id.
func newReloadID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
