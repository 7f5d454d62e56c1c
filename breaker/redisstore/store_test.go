package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

func TestTripSpreads(t *testing.T) {
	ns := cluster(t, 3, breaker.Config{FailureThreshold: 2, OpenDuration: 10 * time.Second})
	bs := []*breaker.Breaker{ns[0].reg.Get("m"), ns[1].reg.Get("m"), ns[2].reg.Get("m")}
	other := ns[1].reg.Get("other")
	start := time.Now()
	call(t, bs[0], breaker.Failure)
	call(t, bs[0], breaker.Failure)
	for i, b := range bs {
		eventually(t, "the trip to reach every instance", func() bool { return b.State() == open })
		if s := b.Snapshot(); !s.OpenUntil.Equal(t0.Add(10 * time.Second)) {
			t.Fatalf("instance %d: open until %v", i, s.OpenUntil)
		}
	}
	t.Logf("trip reached every instance in %v", time.Since(start))
	if other.State() != closed {
		t.Fatal("a breaker of another name opened")
	}
	for _, b := range bs[1:] {
		if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("remote instance let a call through: %v", err)
		}
	}
}

func TestOneProbeInCluster(t *testing.T) {
	ns := cluster(t, 3, breaker.Config{FailureThreshold: 1, OpenDuration: 10 * time.Second})
	bs := []*breaker.Breaker{ns[0].reg.Get("m"), ns[1].reg.Get("m"), ns[2].reg.Get("m")}
	bs[0].Trip()
	for _, b := range bs {
		eventually(t, "open everywhere", func() bool { return b.State() == open })
	}
	for _, n := range ns {
		n.clk.Advance(10 * time.Second)
	}

	// Probe fails: every instance opens again, for the same time.
	var probes []int
	var permit *breaker.Permit
	for i, b := range bs {
		p, err := b.Allow()
		switch {
		case err == nil:
			probes = append(probes, i)
			permit = &p
		case !errors.Is(err, breaker.ErrTooManyProbes):
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	if len(probes) != 1 {
		t.Fatalf("instances %v probed, want exactly one", probes)
	}
	permit.Done(breaker.Failure)
	until := bs[probes[0]].Snapshot().OpenUntil
	for i, b := range bs {
		eventually(t, "the failed probe to reopen every instance", func() bool {
			s := b.Snapshot()
			return s.State == open && s.OpenUntil.Equal(until)
		})
		_ = i
	}

	// Probe succeeds: every instance closes.
	for _, n := range ns {
		n.clk.Advance(10 * time.Second)
	}
	probes = probes[:0]
	for i, b := range bs {
		p, err := b.Allow()
		if err == nil {
			probes = append(probes, i)
			permit = &p
		}
	}
	if len(probes) != 1 {
		t.Fatalf("second round: instances %v probed, want exactly one", probes)
	}
	permit.Done(breaker.Success)
	for _, b := range bs {
		eventually(t, "the successful probe to close every instance", func() bool { return b.State() == closed })
	}
}

func TestAggregateTrips(t *testing.T) {
	// No instance alone reaches minimum_calls; together they do.
	ns := cluster(t, 3, breaker.Config{FailureThreshold: -1, Window: 20, MinimumCalls: 10, FailureRate: 0.5})
	var bs []*breaker.Breaker
	for _, n := range ns {
		b := n.reg.Get("m")
		bs = append(bs, b)
		for range 4 {
			call(t, b, breaker.Failure)
		}
		if s := b.Snapshot(); s.State != closed || s.Calls != 4 {
			t.Fatalf("local window: %+v", s)
		}
	}
	for _, b := range bs {
		eventually(t, "the aggregate to trip every instance", func() bool { return b.State() == open })
	}
}

func TestAggregateBelowThresholdKeepsClosed(t *testing.T) {
	ns := cluster(t, 2, breaker.Config{FailureThreshold: -1, Window: 20, MinimumCalls: 10, FailureRate: 0.5})
	var bs []*breaker.Breaker
	for _, n := range ns {
		b := n.reg.Get("m")
		bs = append(bs, b)
		for range 4 {
			call(t, b, breaker.Success)
		}
		call(t, b, breaker.Failure) // 2 of 10 in the cluster: 20%
	}
	// Wait until both flushes are in Redis, then check nothing tripped.
	rdb := redistest.Client(t)
	key := ns[0].st.Prefix() + ":breaker:m:w:*"
	eventually(t, "the counts to reach Redis", func() bool {
		keys, _ := rdb.Keys(context.Background(), key).Result()
		var calls int
		for _, k := range keys {
			n, _ := rdb.HGet(context.Background(), k, "c").Int()
			calls += n
		}
		return calls == 10
	})
	for _, n := range ns {
		n.st.Close() // a last flush and judgement have run
	}
	for i, b := range bs {
		if b.State() != closed {
			t.Fatalf("instance %d tripped at 20%% failures", i)
		}
	}
}

// TestAggregateCountsCallsInFlight: calls hanging on two instances, too
// few on either to trip it, trip the cluster before any returns.
func TestAggregateCountsCallsInFlight(t *testing.T) {
	ns := cluster(t, 2, breaker.Config{
		FailureThreshold: -1, FailureRate: -1, MinimumCalls: 4,
		SlowCallDuration: time.Second, SlowCallRate: 0.5, OpenDuration: time.Minute,
	})
	bs := []*breaker.Breaker{ns[0].reg.Get("m"), ns[1].reg.Get("m")}
	hang := func(i int) []*breaker.Permit {
		var ps []*breaker.Permit
		for range 2 {
			p, err := bs[i].Allow()
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			ps = append(ps, &p)
		}
		ns[i].clk.Advance(1500 * time.Millisecond)
		if s := bs[i].Snapshot(); s.State != closed || s.SlowInFlight != 2 {
			t.Fatalf("instance %d: %v with %d slow in flight, want closed with 2", i, s.State, s.SlowInFlight)
		}
		return ps
	}
	first := hang(0)
	rdb := redistest.Client(t)
	key := ns[0].st.Prefix() + ":breaker:m:inflight"
	eventually(t, "the first instance's calls in flight to reach Redis", func() bool {
		v, _ := rdb.HGet(context.Background(), key, ns[0].st.Instance()).Result()
		return strings.HasPrefix(v, "2:")
	})
	time.Sleep(100 * time.Millisecond) // a few more flushes: 2 of 4 calls must not trip
	for i, b := range bs {
		if b.State() != closed {
			t.Fatalf("instance %d tripped on 2 calls in flight, minimum 4", i)
		}
	}
	second := hang(1)
	for i, b := range bs {
		eventually(t, "the calls in flight to trip every instance", func() bool { return b.State() == open })
		_ = i
	}
	cause := []breaker.Cause{bs[0].LastTrip().Cause, bs[1].LastTrip().Cause}
	if !slices.Contains(cause, breaker.CauseCluster) {
		t.Fatalf("trip causes %v, want one cluster trip", cause)
	}
	for _, p := range append(first, second...) {
		p.Done(breaker.Failure) // late: counts nowhere
	}
	if s := bs[0].Snapshot(); s.Trips != 1 {
		t.Fatalf("instance 0 tripped %d times, want 1", s.Trips)
	}
}

func TestAttachReadsSharedState(t *testing.T) {
	// An instance started after the trip learns of it from Redis.
	bc := breaker.Config{FailureThreshold: 1, OpenDuration: time.Minute}
	ns := cluster(t, 1, bc)
	ns[0].reg.Get("m").Trip()
	rdb := redistest.Client(t)
	eventually(t, "the state to be written", func() bool {
		return rdb.Exists(context.Background(), ns[0].st.Prefix()+":breaker:m:state").Val() == 1
	})
	late := newNode(t, redistest.URL(), ns[0].st.Prefix(), bc)
	b := late.reg.Get("m")
	eventually(t, "the late instance to open", func() bool { return b.State() == open })
	if s := b.Snapshot(); !s.OpenUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("open until %v", s.OpenUntil)
	}
}

func TestPrefixesIsolate(t *testing.T) {
	redistest.Client(t)
	bc := breaker.Config{FailureThreshold: 1}
	a := newNode(t, redistest.URL(), redistest.Prefix(t), bc)
	b := newNode(t, redistest.URL(), redistest.Prefix(t), bc)
	c := newNode(t, redistest.URL(), a.st.Prefix(), bc)
	a.reg.Get("m").Trip()
	eventually(t, "same prefix to open", func() bool { return c.reg.Get("m").State() == open })
	if b.reg.Get("m").State() != closed {
		t.Fatal("a store with another prefix heard the trip")
	}
}

func TestMalformedAnnouncementsIgnored(t *testing.T) {
	ns := cluster(t, 1, breaker.Config{})
	b := ns[0].reg.Get("m")
	rdb := redistest.Client(t)
	ch := ns[0].st.Prefix() + ":breaker:events"
	for _, msg := range []string{"", "{", `{"name":"m","state":"bogus"}`, `{"state":"open"}`, `[1,2]`} {
		if err := rdb.Publish(context.Background(), ch, msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	good := `{"name":"m","state":"open","open_until":"2025-01-01T00:01:00Z","instance":"elsewhere"}`
	rdb.Publish(context.Background(), ch, good)
	eventually(t, "the valid announcement to apply", func() bool { return b.State() == open })
}

func TestClosedPathDoesNotAllocate(t *testing.T) {
	// A network round trip would allocate; the CLOSED path must not.
	ns := cluster(t, 1, breaker.Config{})
	b := ns[0].reg.Get("m")
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Done(breaker.Success)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call", allocs)
	}
}

func TestBadURLHidesSecret(t *testing.T) {
	for _, cfg := range []redisstore.Config{
		{URL: "redis://:hunter2@127.0.0.1:6379/notadb"},
		{URL: "ftp://user:hunter2@host"},
		{},
	} {
		st, err := redisstore.New(cfg)
		if err == nil {
			st.Close()
			t.Fatalf("%+v: no error", cfg)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error reveals the password: %v", err)
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	ns := cluster(t, 1, breaker.Config{})
	b := ns[0].reg.Get("m")
	if err := ns[0].st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ns[0].st.Close(); err != nil {
		t.Fatal(err)
	}
	// A breaker outliving its store keeps working on local state.
	call(t, b, breaker.Failure)
	call(t, b, breaker.Failure)
	if b.State() != open {
		t.Fatal("breaker did not trip locally")
	}
	ns[0].clk.Advance(time.Minute)
	if _, err := b.Allow(); err != nil {
		t.Fatalf("probe after Close: %v", err)
	}
}
