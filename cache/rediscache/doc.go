// Package rediscache shares a semantic cache (cache.Cache) between ragfuse
// instances through one Redis server (6 or later; not Redis Cluster: the
// writer's transactions span keys of several slots): an answer stored on
// one instance is served by every other. Every lookup stays local; Redis
// is the store of record and the message bus, and nothing on a question's
// path waits on it.
//
// # Keys and stream
//
// Under Config.Prefix (default "ragfuse"):
//
//   - <prefix>:cache:e:<tenant>:<hash> holds one entry: the question, the
//     answer, its model, source, documents, knowledge-base version,
//     creation and expiry times, the question's vector (float32,
//     little-endian) and the instance that stored it, as JSON. <tenant> is
//     the tenant, query-escaped so it holds no ':'; <hash> is 128 bits of
//     SHA-256 of the normalized question, so a new answer to the same
//     question replaces the old one. The key expires at the end of the
//     entry's grace (cache.Config.Grace after its expiry).
//   - <prefix>:cache:index is a sorted set of the entry keys, scored by the
//     end of their grace (Unix milliseconds); writes drop the members past
//     it.
//   - <prefix>:cache:stream is a stream trimmed to about
//     Config.StreamMaxLen entries (XADD MAXLEN ~), one per stored entry,
//     field "e" holding the entry's JSON.
//
// # Writing and following
//
// New builds the local cache with the Shared as its Replica. Put hands
// every stored entry to Stored, which encodes it and appends it to a queue
// of at most Config.QueueSize entries (beyond it the oldest is dropped and
// counted in ShareStatus.Dropped); a background writer drains the queue in
// transactions of up to Config.BatchSize entries (SET PX, ZADD, XADD).
// A background follower reads the stream (XREAD BLOCK Config.Block) and
// stores the entries of other instances with cache.Cache.Restore, which
// keeps their expiry and never replaces a newer entry: an entry reaches
// the other instances after one write and one read, a few milliseconds
// on loopback (TestEntryReachesOtherInstances logs the delay). Each entry
// lands in its own tenant's partition, so tenants stay apart, and
// cache.Config's MaxEntries and MaxTenants bound each instance's memory
// as they do locally. An entry built on another knowledge-base version is
// held but not served, as locally; package config marks entries with
// retrieval.KnowledgeBase.ContentVersion, a hash of the documents, so that
// instances holding the same files agree however often each loaded them.
//
// # Loading
//
// At start, after an outage and when the follower finds that entries it
// had not read were trimmed from the stream, the follower loads the live
// entries from Redis (those whose grace has not ended, at most
// Config.LoadLimit, the last to expire first) in pages, in the
// background, and then follows the stream from where it stood when the
// load began. ShareStatus reports the loads (Loading, Loads, Loaded,
// LoadedAt) and each finished load logs one Info line. A restarted
// instance so serves its former entries, fresh and stale, before any
// model call.
//
// # When Redis is slow or down
//
// Lookups never touch Redis. The first failed call marks Redis unhealthy
// and logs one Warn; writes stay queued (bounded, oldest dropped) and the
// writer tries again every Config.RetryInterval. On the first success it
// logs one Info and resyncs both ways: it writes the queued entries (so
// the others receive them through the stream) and the follower loads the
// entries others wrote meanwhile. Close writes what is still queued,
// within Config.OpTimeout.
//
// # Measuring
//
//	go test -run '^$' -bench 'SharedHit|Stored' -count 5 -benchtime 200ms ./cache/rediscache/
//
// times a cache hit on a shared cache beside one on a local cache, and
// the cost of one stored answer's hand-off (encoding and queueing) beside
// a local Put. The benchmarks and tests need Redis
// (RAGFUSE_TEST_REDIS_URL); figures are in docs/performance.md.
package rediscache
