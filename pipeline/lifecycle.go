package pipeline

import (
	"errors"

	"github.com/ragfuse/ragfuse/breaker"
)

// breakerChanged reports a breaker's change, with its trip reason when
// it opened.
func (p *Pipeline) breakerChanged(name string, from, to breaker.State) {
	p.pokeProber(name)
	e := Event{Kind: EventBreaker, Breaker: name, From: from, To: to}
	if b, ok := p.breakers.Lookup(name); ok && to == breaker.StateOpen {
		e.Trip = b.LastTrip()
	}
	p.emit(e)
}

// emit sends e to the observer, stamped with the clock's time.
func (p *Pipeline) emit(e Event) {
	if p.obs == nil {
		return
	}
	e.Time = p.clock.Now()
	p.obs.Observe(e)
}

// Breakers returns the registry holding the pipeline's breakers.
func (p *Pipeline) Breakers() *breaker.Registry { return p.breakers }

// ReloadKnowledgeBase reloads the knowledge base. Cache entries made from
// the old version stop being served, and the cache tiers drop them.
func (p *Pipeline) ReloadKnowledgeBase() error {
	if p.kb == nil {
		return ErrNoKnowledgeBase
	}
	if err := p.kb.Reload(); err != nil {
		return err
	}
	// Entries built on another version are never served again: free them.
	v := p.kbCacheVer()
	for _, s := range p.stages {
		if c, ok := s.Tier.(invalidator); ok {
			c.Invalidate(v)
		}
	}
	return nil
}

// invalidator is a cache tier that can drop the entries built on other
// knowledge-base versions.
type invalidator interface{ Invalidate(current uint64) int }

// Close refuses new questions, waits for the ones in flight and closes
// Options.Closers. It returns the first error of a closer.
func (p *Pipeline) Close() error {
	if !p.inflight.close() {
		return nil
	}
	<-p.inflight.drained
	if p.stopProbers != nil {
		p.stopProbers()
		p.probing.Wait()
	}
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// contentVersioner is a knowledge base whose documents' hash gives a
// version equal across processes (retrieval.KnowledgeBase.ContentVersion).
type contentVersioner interface{ ContentVersion() uint64 }

// cacheVersion returns the version cache entries are marked with: kb's
// ContentVersion when it has one, so that instances sharing a cache agree
// on it, else its Version.
func cacheVersion(kb KnowledgeBase) func() uint64 {
	if c, ok := kb.(contentVersioner); ok {
		return c.ContentVersion
	}
	return kb.Version
}
