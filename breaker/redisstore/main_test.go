package redisstore_test

import (
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/clock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start time of every clock.Manual in the tests.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	closed   = breaker.StateClosed
	halfOpen = breaker.StateHalfOpen
	open     = breaker.StateOpen
)

// node is one simulated instance: a store of its own and a registry whose
// breakers use it, on a clock of its own.
type node struct {
	st  *redisstore.Store
	clk *clock.Manual
	reg *breaker.Registry
	log *redistest.Log
}

// newNode starts an instance on url under prefix.
func newNode(t *testing.T, url, prefix string, bc breaker.Config) *node {
	t.Helper()
	n := &node{clk: clock.NewManual(t0), log: &redistest.Log{}}
	st, err := redisstore.New(redisstore.Config{
		URL: url, Prefix: prefix, Clock: n.clk, Logger: slog.New(n.log),
		OpTimeout: testOpTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	n.st = st
	bc.Clock, bc.Store = n.clk, st
	n.reg = breaker.NewRegistry(bc)
	return n
}

// cluster starts n instances sharing the test database.
func cluster(t *testing.T, n int, bc breaker.Config) []*node {
	t.Helper()
	redistest.Client(t)
	prefix := redistest.Prefix(t)
	var ns []*node
	for range n {
		ns = append(ns, newNode(t, redistest.URL(), prefix, bc))
	}
	return ns
}

// testOpTimeout is the stores' OpTimeout in tests: longer than the
// default, so that a loaded test machine does not pass for an outage.
const testOpTimeout = 500 * time.Millisecond

// eventually polls cond every 5ms until it holds, for at most 5s (pub/sub
// takes milliseconds; the margin is for loaded test machines).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// call makes one permitted call on b reporting o.
func call(t *testing.T, b *breaker.Breaker, o breaker.Outcome) {
	t.Helper()
	p, err := b.Allow()
	if err != nil {
		t.Fatalf("%s: %v", b.Name(), err)
	}
	p.Done(o)
}
