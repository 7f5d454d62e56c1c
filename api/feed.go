package api

import (
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/pipeline"
)

// The console's history: answers by source per feedBucket over the last
// feedBuckets buckets, and the feedQuestions latest questions.
const (
	feedBucket    = 10 * time.Second
	feedBuckets   = 30
	feedQuestions = 25
	feedQueue     = 64 // questions a slow subscriber may fall behind by before it misses some
)

// questionEvent is one question the server answered or failed, as the
// console's feed sends it.
type questionEvent struct {
	Time       time.Time     `json:"time"`
	RequestID  string        `json:"request_id"`
	Tenant     string        `json:"tenant"`
	Source     string        `json:"source"` // the answer's source; "error" when the question failed
	Degraded   bool          `json:"degraded"`
	DurationMS int64         `json:"duration_ms"`
	Attempts   []AttemptInfo `json:"attempts"`
	Error      string        `json:"error,omitempty"`    // a failed question's error code
	Question   string        `json:"question,omitempty"` // only with console.show_questions

	attempts []pipeline.Attempt // the Result's, shaped into Attempts only when sent (see sendable)
}

// sendable returns q with its Attempts filled from the Result's.
func (q questionEvent) sendable() questionEvent {
	if q.Attempts == nil {
		q.Attempts = attemptInfos(q.attempts)
	}
	return q
}

// historyEvent is what the feed sends first: the answers by source per
// bucket (oldest first, empty buckets included) and the latest questions
// (newest first).
type historyEvent struct {
	BucketMS  int64           `json:"bucket_ms"`
	Buckets   []historyBucket `json:"buckets"`
	Questions []questionEvent `json:"questions"`
}

// historyBucket is the answers by source of the feedBucket from Start.
type historyBucket struct {
	Start  time.Time      `json:"start"`
	Counts map[string]int `json:"counts"`
}

// feed keeps the console's history and hands each new question to its
// subscribers. The zero feed is ready to use; it is safe for concurrent
// use.
type feed struct {
	mu     sync.Mutex                      // guards the fields below
	recent [feedQuestions]questionEvent    // a ring: the newest at next-1
	next   int                             // where the next question goes
	held   int                             // questions in recent
	counts map[int64]map[string]int        // bucket number (Unix time / feedBucket) -> source -> answers
	subs   map[chan questionEvent]struct{} // the subscribers
}

// add records q and offers it to every subscriber; one that is
// feedQueue questions behind misses it.
func (f *feed) add(q questionEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recent[f.next] = q
	f.next = (f.next + 1) % feedQuestions
	f.held = min(f.held+1, feedQuestions)
	if f.counts == nil {
		f.counts = map[int64]map[string]int{}
	}
	n := bucketOf(q.Time)
	if f.counts[n] == nil {
		f.counts[n] = map[string]int{}
		for b := range f.counts { // a new bucket: drop the ones out of the history
			if b <= n-feedBuckets {
				delete(f.counts, b)
			}
		}
	}
	f.counts[n][q.Source]++
	for ch := range f.subs {
		select {
		case ch <- q:
		default:
		}
	}
}

// history returns the buckets of the feedBuckets up to now's and the
// latest questions.
func (f *feed) history(now time.Time) historyEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := historyEvent{BucketMS: feedBucket.Milliseconds(), Questions: make([]questionEvent, 0, f.held)}
	last := bucketOf(now)
	for n := last - feedBuckets + 1; n <= last; n++ {
		counts := map[string]int{}
		for src, c := range f.counts[n] {
			counts[src] = c
		}
		h.Buckets = append(h.Buckets, historyBucket{Start: time.Unix(0, n*int64(feedBucket)).UTC(), Counts: counts})
	}
	for i := 1; i <= f.held; i++ {
		h.Questions = append(h.Questions, f.recent[(f.next-i+feedQuestions)%feedQuestions].sendable())
	}
	return h
}

// subscribe returns a channel of the questions added from now on and the
// func that ends the subscription.
func (f *feed) subscribe() (<-chan questionEvent, func()) {
	ch := make(chan questionEvent, feedQueue)
	cancel := sync.OnceFunc(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, ch)
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan questionEvent]struct{}{}
	}
	f.subs[ch] = struct{}{}
	return ch, cancel
}

// bucketOf returns the number of the bucket holding t.
func bucketOf(t time.Time) int64 {
	ns := t.UnixNano()
	n := ns / int64(feedBucket)
	if ns < 0 && ns%int64(feedBucket) != 0 {
		n-- // floor, for times before 1970
	}
	return n
}
