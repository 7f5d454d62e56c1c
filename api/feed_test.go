package api

import (
	"fmt"
	"testing"
	"time"
)

func TestFeedHistory(t *testing.T) {
	var f feed
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC) // on a bucket's start
	q := func(at time.Duration, src string) questionEvent {
		return questionEvent{Time: t0.Add(at), Source: src, RequestID: fmt.Sprint(at)}
	}
	f.add(q(0, "primary"))
	f.add(q(time.Second, "primary"))
	f.add(q(9*time.Second, "fallback"))
	f.add(q(10*time.Second, "error"))
	h := f.history(t0.Add(15 * time.Second))
	if h.BucketMS != 10000 || len(h.Buckets) != feedBuckets {
		t.Fatalf("bucket_ms %d, %d buckets", h.BucketMS, len(h.Buckets))
	}
	last, prev := h.Buckets[feedBuckets-1], h.Buckets[feedBuckets-2]
	if !last.Start.Equal(t0.Add(10*time.Second)) || last.Counts["error"] != 1 || len(last.Counts) != 1 {
		t.Errorf("last bucket %+v", last)
	}
	if !prev.Start.Equal(t0) || prev.Counts["primary"] != 2 || prev.Counts["fallback"] != 1 {
		t.Errorf("previous bucket %+v", prev)
	}
	if first := h.Buckets[0]; !first.Start.Equal(t0.Add(-28*feedBucket)) || len(first.Counts) != 0 {
		t.Errorf("first bucket %+v", first)
	}
	if len(h.Questions) != 4 || h.Questions[0].Source != "error" || h.Questions[3].RequestID != "0s" {
		t.Errorf("questions %+v, want newest first", h.Questions)
	}

	// Buckets older than the history are dropped; the questions are capped.
	for i := range feedQuestions + 5 {
		f.add(q(time.Hour+time.Duration(i)*time.Second, "cache"))
	}
	h = f.history(t0.Add(time.Hour + time.Minute))
	total := 0
	for _, b := range h.Buckets {
		total += b.Counts["cache"] + b.Counts["primary"]
	}
	if total != feedQuestions+5 || len(f.counts) > feedBuckets {
		t.Errorf("%d answers over %d buckets kept, want the %d of the last hour only", total, len(f.counts), feedQuestions+5)
	}
	if len(h.Questions) != feedQuestions || h.Questions[0].Time != t0.Add(time.Hour+(feedQuestions+4)*time.Second) {
		t.Errorf("%d questions, newest %v", len(h.Questions), h.Questions[0].Time)
	}
}

func TestFeedSubscribe(t *testing.T) {
	var f feed
	f.add(questionEvent{RequestID: "before"})
	ch, cancel := f.subscribe()
	slow, cancelSlow := f.subscribe()
	defer cancelSlow()
	for i := range feedQueue + 10 {
		f.add(questionEvent{RequestID: fmt.Sprint(i)})
		if got := <-ch; got.RequestID != fmt.Sprint(i) {
			t.Fatalf("subscriber got %q, want %d", got.RequestID, i)
		}
	}
	if n := len(slow); n != feedQueue {
		t.Errorf("a subscriber that reads nothing holds %d questions, want %d (the rest dropped)", n, feedQueue)
	}
	cancel()
	cancel() // a second cancel is a no-op
	f.add(questionEvent{RequestID: "after"})
	select {
	case q := <-ch:
		t.Errorf("a cancelled subscription got %q", q.RequestID)
	default:
	}
}
