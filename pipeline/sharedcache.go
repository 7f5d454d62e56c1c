package pipeline

import "github.com/ragfuse/ragfuse/cache"

// SharedCacheStatus tells how a semantic cache is shared with other
// instances (cache.ShareStatus): Redis's health, the loads of the live
// entries, the queue of writes.
type SharedCacheStatus = cache.ShareStatus

// sharedCacher is a cache tier that may be shared with other instances.
type sharedCacher interface {
	SharedStatus() (cache.ShareStatus, bool)
}

// sharedStatus returns how tier t is shared, nil for a tier of this
// process alone.
func sharedStatus(t any) *SharedCacheStatus {
	sc, ok := t.(sharedCacher)
	if !ok {
		return nil
	}
	st, ok := sc.SharedStatus()
	if !ok {
		return nil
	}
	return &st
}
