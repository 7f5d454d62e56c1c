package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

// heard keeps the cooldowns and reloads one store's callbacks hear.
type heard struct {
	mu      sync.Mutex
	cool    map[string]time.Time
	calls   int // cooldown callbacks
	reloads []string
}

// listen installs h's callbacks on st.
func listen(st *redisstore.Store) *heard {
	h := &heard{cool: map[string]time.Time{}}
	st.OnCooldown(func(model string, until time.Time) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.cool[model] = until
		h.calls++
	})
	st.OnReload(func(id string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reloads = append(h.reloads, id)
	})
	return h
}

// cooldown returns what h heard of model, and whether it heard anything.
func (h *heard) cooldown(model string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.cool[model]
	return t, ok
}

func (h *heard) reloaded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.reloads...)
}

func TestCooldownReachesEveryInstance(t *testing.T) {
	ns := cluster(t, 3, breaker.Config{})
	hs := []*heard{listen(ns[0].st), listen(ns[1].st), listen(ns[2].st)}
	until := t0.Add(30 * time.Second)

	ns[0].st.ShareCooldown("big", until)
	for _, h := range hs[1:] {
		eventually(t, "the cooldown to reach another instance", func() bool {
			got, ok := h.cooldown("big")
			return ok && got.Equal(until)
		})
	}

	// A reset on B ends it on A and C.
	ns[1].st.ShareCooldown("big", time.Time{})
	for _, h := range []*heard{hs[0], hs[2]} {
		eventually(t, "the end of the cooldown to spread", func() bool {
			got, ok := h.cooldown("big")
			return ok && got.IsZero()
		})
	}
}

func TestCooldownResyncReadsLiveKeys(t *testing.T) {
	rdb := redistest.Client(t)
	ns := cluster(t, 1, breaker.Config{})
	a := ns[0]
	a.st.ShareCooldown("live", t0.Add(time.Minute))
	a.st.ShareCooldown("short", t0.Add(300*time.Millisecond)) // its key expires in 300ms of Redis time
	a.st.ShareCooldown("over", t0.Add(-time.Second))          // over already: never stored
	a.st.ShareCooldown("ended", t0.Add(time.Minute))
	a.st.ShareCooldown("ended", time.Time{})
	eventually(t, "the cooldowns to be written", func() bool {
		n, err := rdb.Exists(context.Background(), a.st.Prefix()+":cooldown:live", a.st.Prefix()+":cooldown:short").Result()
		return err == nil && n == 2
	})
	time.Sleep(400 * time.Millisecond) // let "short" expire in Redis

	// An instance that starts now reads what is live or ended, and only that.
	late := newNode(t, redistest.URL(), a.st.Prefix(), breaker.Config{})
	h := listen(late.st)
	eventually(t, "the live cooldown to be read", func() bool {
		got, ok := h.cooldown("live")
		return ok && got.Equal(t0.Add(time.Minute))
	})
	for _, m := range []string{"short", "over"} {
		if got, ok := h.cooldown(m); ok {
			t.Errorf("resync delivered %s until %v, which is not live", m, got)
		}
	}
	// An end is delivered too, for an instance that missed it.
	if got, ok := h.cooldown("ended"); !ok || !got.IsZero() {
		t.Errorf("resync delivered %v, %v for an ended cooldown, want its end", got, ok)
	}
}

func TestReloadRequestReachesOthers(t *testing.T) {
	ns := cluster(t, 3, breaker.Config{})
	hs := []*heard{listen(ns[0].st), listen(ns[1].st), listen(ns[2].st)}
	if err := ns[2].st.RequestReload(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs[:2] {
		eventually(t, "the reload request to arrive", func() bool { return len(h.reloaded()) == 1 })
		if got := h.reloaded(); got[0] != "r1" {
			t.Fatalf("reload id %q, want r1", got[0])
		}
	}
	time.Sleep(50 * time.Millisecond) // a request echoed to its sender would have arrived by now
	if got := hs[2].reloaded(); len(got) != 0 {
		t.Fatalf("the requesting instance ran its own request: %v", got)
	}
}

func TestMembersListLiveInstances(t *testing.T) {
	ns := cluster(t, 3, breaker.Config{})
	for i, n := range ns {
		n.st.SetMember(redisstore.Member{Version: uint64(i + 1), Digest: "d", At: t0})
	}
	var got []redisstore.Member
	eventually(t, "three members", func() bool {
		var err error
		got, err = ns[0].st.Members(context.Background())
		return err == nil && len(got) == 3
	})
	versions := map[string]uint64{}
	for _, m := range got {
		versions[m.Instance] = m.Version
	}
	for i, n := range ns {
		if versions[n.st.Instance()] != uint64(i+1) {
			t.Fatalf("members %+v: instance %d reports version %d, want %d", got, i, versions[n.st.Instance()], i+1)
		}
	}

	// An instance that closes leaves the list.
	if err := ns[2].st.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the closed instance to leave", func() bool {
		got, err := ns[1].st.Members(context.Background())
		return err == nil && len(got) == 2
	})
}

func TestCooldownDuringOutageSpreadsAfterRecovery(t *testing.T) {
	srv := redistest.StartServer(t)
	a := newNode(t, srv.URL(), "cool", breaker.Config{})
	b := newNode(t, srv.URL(), "cool", breaker.Config{})
	hb := listen(b.st)
	a.st.SetMember(redisstore.Member{Version: 1})

	srv.Kill()
	eventually(t, "the stores to notice the outage", func() bool { return !a.st.Healthy() && !b.st.Healthy() })
	start := time.Now()
	a.st.ShareCooldown("big", t0.Add(time.Minute)) // hands the work over: no wait
	if d := time.Since(start); d > 10*time.Millisecond {
		t.Fatalf("ShareCooldown took %v with Redis down", d)
	}
	if _, err := a.st.Members(context.Background()); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Members during the outage: %v, want ErrUnavailable", err)
	}
	if err := a.st.RequestReload(context.Background(), "r"); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("RequestReload during the outage: %v, want ErrUnavailable", err)
	}

	srv.Start()
	eventuallyWithin(t, 10*time.Second, "both stores to reconnect", func() bool { return a.st.Healthy() && b.st.Healthy() })
	eventually(t, "the outage's cooldown to reach the other instance", func() bool {
		got, ok := hb.cooldown("big")
		return ok && got.Equal(t0.Add(time.Minute))
	})
	// The restarted Redis lost every key: the member is written again.
	eventually(t, "the member to be written again", func() bool {
		ms, err := b.st.Members(context.Background())
		return err == nil && len(ms) == 1 && ms[0].Instance == a.st.Instance()
	})
}
