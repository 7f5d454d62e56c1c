package rediscache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
)

// benchEntries is how many entries the caches of the benchmarks hold.
const benchEntries = 1000

// benchQuestions returns n distinct questions and their vectors.
func benchQuestions(b *testing.B, n int, tag string) ([]string, [][]float32) {
	b.Helper()
	qs := make([]string, n)
	vs := make([][]float32, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("how long does order %s%d take to reach city %d", tag, i, i*31)
		vs[i] = vec(b, qs[i])
	}
	return qs, vs
}

// BenchmarkSharedHit times a cache hit (a reworded question, embedding
// excluded) on a shared cache and on two local ones holding the same
// entries, the second local one a control of the run's noise: the lookup
// is local in all three.
func BenchmarkSharedHit(b *testing.B) {
	redistest.Client(b)
	qs, _ := benchQuestions(b, benchEntries, "")
	asked := make([]string, len(qs))
	askedVecs := make([][]float32, len(qs))
	for i, q := range qs {
		asked[i] = "please, " + q
		askedVecs[i] = vec(b, asked[i])
	}
	local := cache.New(cache.Config{})
	n := newNode(b, redistest.URL(), redistest.Prefix(b), rediscache.Config{})
	local2 := cache.New(cache.Config{})
	for _, c := range []*cache.Cache{local, n.c, local2} {
		for _, q := range qs {
			if err := c.Put("acme", q, vec(b, q), cache.Entry{Text: q}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, bc := range []struct {
		name string
		c    *cache.Cache
	}{{"shared", n.c}, {"local", local}, {"local2", local2}} {
		b.Run(bc.name, func(b *testing.B) {
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				if _, err := bc.c.Get("acme", asked[i], askedVecs[i], 0); err != nil {
					b.Fatalf("miss on %q: %v", asked[i], err)
				}
				i = (i + 1) % len(asked)
			}
		})
	}
}

// BenchmarkStored times the write path per stored answer: a local Put; a
// Put on a shared cache (the entry encoded and queued, what a question
// waits for); and that Put followed by its write to Redis (batched by the
// background writer), amortized per entry.
func BenchmarkStored(b *testing.B) {
	redistest.Client(b)
	qs, vs := benchQuestions(b, 4096, "s")
	put := func(b *testing.B, c *cache.Cache) {
		i := 0
		defer reportCPU(b)()
		for b.Loop() {
			if err := c.Put("acme", qs[i%len(qs)], vs[i%len(qs)], cache.Entry{Text: "answer"}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("local-put", func(b *testing.B) { put(b, cache.New(cache.Config{})) })
	b.Run("shared-put", func(b *testing.B) {
		n := newNode(b, redistest.URL(), redistest.Prefix(b), rediscache.Config{QueueSize: 1 << 20})
		put(b, n.c)
	})
	b.Run("shared-put+write", func(b *testing.B) {
		n := newNode(b, redistest.URL(), redistest.Prefix(b), rediscache.Config{QueueSize: 1 << 20})
		defer reportCPU(b)()
		put(b, n.c)
		deadline := time.Now().Add(time.Minute)
		for n.s.ShareStatus().Queued > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if st := n.s.ShareStatus(); st.Queued > 0 || st.Dropped > 0 {
			b.Fatalf("not all written: %+v", st)
		}
	})
}

// BenchmarkPropagation times an entry stored on one instance until
// another serves it: one write and one read of the stream.
func BenchmarkPropagation(b *testing.B) {
	redistest.Client(b)
	prefix := redistest.Prefix(b)
	a := newNode(b, redistest.URL(), prefix, rediscache.Config{})
	o := newNode(b, redistest.URL(), prefix, rediscache.Config{})
	deadline := time.Now().Add(5 * time.Second)
	for o.s.ShareStatus().Loads == 0 || o.s.ShareStatus().Loading {
		if time.Now().After(deadline) {
			b.Fatal("no first load")
		}
		time.Sleep(time.Millisecond)
	}
	qs, vs := benchQuestions(b, 4096, "p")
	i := 0
	for b.Loop() {
		q, v := qs[i%len(qs)], vs[i%len(qs)]
		want := fmt.Sprint(i)
		if err := a.c.Put("acme", q, v, cache.Entry{Text: want}); err != nil {
			b.Fatal(err)
		}
		for {
			if e, err := o.c.Get("acme", q, v, 0); err == nil && e.Text == want {
				break
			}
			time.Sleep(20 * time.Microsecond)
		}
		i++
	}
}

// reportCPU reports the process CPU time per operation (cpu-ns/op), the
// background writer's and reader's included, when the returned function
// is called at the end of a benchmark.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
