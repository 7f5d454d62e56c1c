package retrieval

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// VectorStatus says whether a Hybrid over a corpus has the document
// vectors of the corpus's current version; until it has, questions are
// ranked by the lexical score alone.
type VectorStatus struct {
	Ready   bool      // the vectors of Version are complete and in use
	Version uint64    // the corpus version they are (or are being) computed for; 0 before the first
	Done    int       // documents of Version embedded or reused so far
	Total   int       // documents of Version
	Err     error     // the last failure for Version, if it is not ready
	Failed  time.Time // when that failure happened
}

// vectorSet is the complete set of document vectors of one corpus version;
// it is immutable once stored.
type vectorSet struct {
	version uint64
	docs    []Doc       // the version's documents, in order
	vecs    [][]float32 // one per document
	keys    []uint64    // content hash per document, to reuse vectors after a reload
}

// vectorJob embeds the documents of one version in the background.
type vectorJob struct {
	version uint64
	cancel  context.CancelFunc
	done    int // documents embedded or reused; guarded by Hybrid.mu
	total   int // guarded by Hybrid.mu
}

// corpusState is the background side of a Hybrid over a corpus; Hybrid.mu
// guards it.
type corpusState struct {
	job     *vectorJob    // the running job, nil when none
	failed  VectorStatus  // the last failure: its version, error and time
	changed chan struct{} // closed and replaced whenever ready, job or failed change
	closed  bool
}

// corpusNow returns the documents and version of the corpus as they are
// now, or errVersionChanged if it kept changing while read.
func (h *Hybrid) corpusNow() ([]Doc, uint64, error) {
	switch c := h.cfg.Lexical.(type) {
	case *KnowledgeBase:
		s := c.cur.Load()
		return s.docs, s.version, nil
	case corpus:
		for range maxCorpusTries {
			v := c.Version()
			docs := c.Docs()
			if c.Version() == v {
				return docs, v, nil
			}
		}
	}
	return nil, 0, errVersionChanged
}

// readySet returns the document vectors of version, or nil when they are
// not ready yet, in which case it makes sure they are being computed.
func (h *Hybrid) readySet(version uint64) *vectorSet {
	if s := h.ready.Load(); s != nil && s.version == version {
		return s
	}
	h.ensure(version)
	return nil
}

// ensure starts a background job for the corpus's current version unless
// one runs for version (or a newer one), version is ready, or the last
// attempt at it failed less than RetryDelay ago.
func (h *Hybrid) ensure(version uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &h.state
	switch {
	case st.closed:
		return
	case st.job != nil && st.job.version >= version:
		return
	case st.failed.Err != nil && st.failed.Version >= version &&
		h.cfg.Clock.Now().Before(st.failed.Failed.Add(h.cfg.RetryDelay)):
		return
	}
	if s := h.ready.Load(); s != nil && s.version >= version {
		return
	}
	if st.job != nil {
		st.job.cancel() // an older version: its vectors would be of no use
	}
	ctx, cancel := context.WithCancel(h.bg)
	job := &vectorJob{version: version, cancel: cancel}
	st.job = job
	h.notifyLocked()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer cancel()
		h.run(ctx, job)
	}()
}

// notifyLocked wakes the waiters of WaitVectors; it requires h.mu.
func (h *Hybrid) notifyLocked() {
	close(h.state.changed)
	h.state.changed = make(chan struct{})
}

// run computes the vectors of the corpus's current version, reusing those
// of unchanged documents, and stores them if nothing newer is ready. A
// failure is logged and reported to OnFallback before waiters hear of it.
func (h *Hybrid) run(ctx context.Context, job *vectorJob) {
	start := h.cfg.Clock.Now()
	docs, version, err := h.corpusNow()
	var set *vectorSet
	if err == nil {
		set, err = h.embedCorpus(ctx, job, docs, version)
	}
	switch {
	case err == nil:
		h.cfg.Logger.Info("retrieval: document vectors ready", "version", set.version,
			"documents", len(set.docs), "took", h.cfg.Clock.Now().Sub(start))
	case ctx.Err() != nil:
		h.cfg.Logger.Info("retrieval: document embedding stopped", "version", job.version)
	default:
		h.cfg.Logger.Warn("retrieval: document embedding failed; questions are ranked lexically",
			"version", job.version, "err", err, "retry_after", h.cfg.RetryDelay)
		if h.cfg.OnFallback != nil {
			h.cfg.OnFallback(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state.job == job {
		h.state.job = nil
	}
	switch {
	case err == nil:
		if old := h.ready.Load(); old == nil || old.version < set.version {
			h.ready.Store(set)
		}
		if h.state.failed.Version <= set.version {
			h.state.failed = VectorStatus{}
		}
	case ctx.Err() == nil:
		h.state.failed = VectorStatus{Version: max(version, job.version), Err: err, Failed: h.cfg.Clock.Now()}
	}
	h.notifyLocked()
}

// embedCorpus embeds the documents of version, BatchSize at a time with at
// most Concurrency batches in flight, each bounded by BatchTimeout.
func (h *Hybrid) embedCorpus(ctx context.Context, job *vectorJob, docs []Doc, version uint64) (*vectorSet, error) {
	emb := h.embedder()
	set := &vectorSet{version: version, docs: docs, vecs: make([][]float32, len(docs)), keys: make([]uint64, len(docs))}
	reuse := make(map[uint64][]float32)
	if old := h.ready.Load(); old != nil {
		for i, k := range old.keys {
			reuse[k] = old.vecs[i]
		}
	}
	var missing []int
	for i, d := range docs {
		set.keys[i] = h.key(d)
		if v, ok := reuse[set.keys[i]]; ok {
			set.vecs[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	h.progress(job, len(docs)-len(missing), len(docs))
	h.cfg.Logger.Info("retrieval: embedding documents", "version", version,
		"documents", len(docs), "to_embed", len(missing))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	sem := make(chan struct{}, h.cfg.Concurrency)
	for start := 0; start < len(missing); start += h.cfg.BatchSize {
		batch := missing[start:min(start+h.cfg.BatchSize, len(missing))]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			vs, err := h.embedBatch(ctx, emb, docs, batch)
			if err != nil {
				cancel(err)
				return
			}
			for j, i := range batch {
				set.vecs[i] = vs[j]
			}
			h.progress(job, len(batch), 0)
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return set, nil
}

// progress adds done documents to job's count and sets its total if
// total > 0.
func (h *Hybrid) progress(job *vectorJob, done, total int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	job.done += done
	if total > 0 {
		job.total = total
	}
}

// candidateVectors returns the embeddings of docs, the candidates of a
// Retriever that is not a corpus, embedding those not cached yet.
func (h *Hybrid) candidateVectors(ctx context.Context, docs []Doc) ([][]float32, error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.sem }()
	emb := h.embedder()
	keys := make([]uint64, len(docs))
	// out is filled as vectors are found or embedded: clearing the cache
	// below must not lose the vectors of this call.
	out := make([][]float32, len(docs))
	var missing []int
	for i, d := range docs {
		keys[i] = h.key(d)
		if v, ok := h.vecs[keys[i]]; ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += h.cfg.BatchSize {
		batch := missing[start:min(start+h.cfg.BatchSize, len(missing))]
		vs, err := h.embedBatch(ctx, emb, docs, batch)
		if err != nil {
			return nil, err
		}
		if len(h.vecs)+len(vs) > maxCachedVectors {
			clear(h.vecs)
		}
		for j, i := range batch {
			h.vecs[keys[i]] = vs[j]
			out[i] = vs[j]
		}
	}
	return out, nil
}

// key identifies a document's embedded content.
func (h *Hybrid) key(d Doc) uint64 {
	var mh maphash.Hash
	mh.SetSeed(h.seed)
	mh.WriteString(d.Title)
	mh.WriteByte(0)
	mh.WriteString(d.Text)
	return mh.Sum64()
}

// VectorStatus reports the state of the document vectors of the corpus's
// current version. Over a Retriever that is not a corpus, documents are
// embedded with each question and the status is always ready.
func (h *Hybrid) VectorStatus() VectorStatus {
	if !h.isCorpus() || h.embedder() == nil {
		return VectorStatus{Ready: true}
	}
	_, version, _ := h.corpusNow()
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.ready.Load(); s != nil && s.version == version {
		return VectorStatus{Ready: true, Version: version, Done: len(s.docs), Total: len(s.docs)}
	}
	st := VectorStatus{Version: version}
	if j := h.state.job; j != nil {
		st.Version, st.Done, st.Total = j.version, j.done, j.total
	}
	if f := h.state.failed; f.Err != nil && f.Version >= version {
		st.Err, st.Failed = f.Err, f.Failed
	}
	return st
}

// StartVectors starts computing the document vectors of the corpus's
// current version in the background, if they are not ready or being
// computed; questions start it too. It returns at once.
func (h *Hybrid) StartVectors() {
	if h.isCorpus() && h.embedder() != nil {
		if _, version, err := h.corpusNow(); err == nil {
			h.ensure(version)
		}
	}
}

// WaitVectors starts computing the document vectors of the corpus's
// current version if needed and waits until they are ready (nil), the
// computation fails (its error), or ctx is done (ctx.Err()).
func (h *Hybrid) WaitVectors(ctx context.Context) error {
	for {
		h.StartVectors() // a reload may have landed meanwhile
		st := h.VectorStatus()
		if st.Ready {
			return nil
		}
		h.mu.Lock()
		ch, closed, running := h.state.changed, h.state.closed, h.state.job != nil
		h.mu.Unlock()
		switch {
		case closed:
			return errClosed
		case !running && st.Err != nil:
			return st.Err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the background embedding and waits for it to end. Vectors
// ready before stay in use, but no new ones are computed: after a reload,
// questions are ranked by the lexical score. Close may be called more
// than once.
func (h *Hybrid) Close() error {
	h.mu.Lock()
	h.state.closed = true
	h.stop()
	h.notifyLocked()
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}
