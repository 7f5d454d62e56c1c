package breaker

import (
	"cmp"
	"slices"
	"sync"
)

// Registry holds one Breaker per name, created on first use. It is safe for
// concurrent use; looking up an existing breaker takes no lock.
type Registry struct {
	defaults Config
	byName   sync.Map   // name -> *Breaker
	mu       sync.Mutex // serializes creation
}

// NewRegistry returns an empty Registry whose breakers use defaults unless
// created with GetWith.
func NewRegistry(defaults Config) *Registry {
	return &Registry{defaults: defaults}
}

// Get returns the breaker named name, creating it with the registry's
// defaults on first use.
func (r *Registry) Get(name string) *Breaker {
	return r.GetWith(name, r.defaults)
}

// GetWith returns the breaker named name, creating it with cfg on first use;
// a nil Clock, Store or OnStateChange in cfg is taken from the registry's
// defaults. An existing breaker is returned as it is, whatever cfg says.
func (r *Registry) GetWith(name string, cfg Config) *Breaker {
	if b, ok := r.byName.Load(name); ok {
		return b.(*Breaker)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.byName.Load(name); ok {
		return b.(*Breaker)
	}
	if cfg.Clock == nil {
		cfg.Clock = r.defaults.Clock
	}
	if cfg.Store == nil {
		cfg.Store = r.defaults.Store
	}
	if cfg.OnStateChange == nil {
		cfg.OnStateChange = r.defaults.OnStateChange
	}
	b := New(name, cfg)
	r.byName.Store(name, b)
	return b
}

// Lookup returns the breaker named name, if it exists.
func (r *Registry) Lookup(name string) (*Breaker, bool) {
	b, ok := r.byName.Load(name)
	if !ok {
		return nil, false
	}
	return b.(*Breaker), true
}

// Snapshots returns a Snapshot of every breaker, sorted by name.
func (r *Registry) Snapshots() []Snapshot {
	var out []Snapshot
	r.byName.Range(func(_, b any) bool {
		out = append(out, b.(*Breaker).Snapshot())
		return true
	})
	slices.SortFunc(out, func(a, b Snapshot) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
