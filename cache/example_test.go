package cache_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragfuse/ragfuse/cache"
)

func Example() {
	ctx := context.Background()
	emb := cache.NewHashEmbedder(0)
	c := cache.New(cache.Config{}) // similarity 0.92, TTL 24h, 10000 entries per tenant

	embed := func(q string) []float32 {
		v, _ := emb.Embed(ctx, []string{q})
		return v[0]
	}
	const kb = 1 // the knowledge-base version the answer was built on
	q := "How do I return an item?"
	_ = c.Put("acme", q, embed(q), cache.Entry{Text: "Open Orders and choose Return.", Source: "primary", KBVersion: kb})

	for _, ask := range []struct{ tenant, q string }{
		{"acme", "how can I return an item"},   // a rewording: hit
		{"acme", "How do I cancel an item?"},   // the false-hit guard says no
		{"globex", "How do I return an item?"}, // another tenant: miss
	} {
		e, err := c.Get(ask.tenant, ask.q, embed(ask.q), kb)
		if errors.Is(err, cache.ErrMiss) {
			fmt.Printf("%s %q: miss\n", ask.tenant, ask.q)
			continue
		}
		fmt.Printf("%s %q: %s\n", ask.tenant, ask.q, e.Text)
	}
	// Output:
	// acme "how can I return an item": Open Orders and choose Return.
	// acme "How do I cancel an item?": miss
	// globex "How do I return an item?": miss
}
