package rediscache_test

import (
	"context"
	"log"
	"time"

	"github.com/ragfuse/ragfuse/cache"
	"github.com/ragfuse/ragfuse/cache/rediscache"
)

// Each instance builds its cache with New on the same Redis and prefix; an
// answer one instance stores is then served by all, and a restarted
// instance loads the live entries in the background.
func ExampleNew() {
	sh, c, err := rediscache.New(rediscache.Config{
		Cache:  cache.Config{TTL: 24 * time.Hour, Grace: time.Hour},
		URL:    "redis://127.0.0.1:6379/0",
		Prefix: "ragfuse-prod",
	})
	if err != nil {
		log.Fatal(err) // a bad URL; an unreachable Redis is not an error
	}
	defer sh.Close()

	emb := cache.NewHashEmbedder(cache.DefaultHashDim)
	q := "How do I return an item?"
	v, _ := emb.Embed(context.Background(), []string{q})
	_ = c.Put("acme", q, v[0], cache.Entry{Text: "Within 30 days of delivery.", KBVersion: 1})

	// Lookups are local: no Redis round trip.
	if e, err := c.Get("acme", "how can I return an item", v[0], 1); err == nil {
		_ = e.Text
	}
	st := sh.ShareStatus() // Redis's health, the loads, the queue of writes
	_ = st
}
