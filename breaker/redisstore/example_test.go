package redisstore_test

import (
	"context"
	"log"
	"time"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/breaker/redisstore"
)

// Each instance opens a Store on the same Redis and prefix and creates its
// breakers with it; a trip on one instance then opens the breaker on all.
func ExampleNew() {
	st, err := redisstore.New(redisstore.Config{
		URL:    "redis://127.0.0.1:6379/0",
		Prefix: "ragfuse-prod",
	})
	if err != nil {
		log.Fatal(err) // a bad URL; an unreachable Redis is not an error
	}
	defer st.Close()

	reg := breaker.NewRegistry(breaker.Config{Store: st, OpenDuration: 30 * time.Second})
	b := reg.Get("model/qwen3-max")
	if p, err := b.Allow(); err == nil {
		p.Done(breaker.Success)
	}

	// Rate limits shared by every instance: 5 questions per second per tenant.
	ok, err := st.Limiter().Allow(context.Background(), "tenant:acme", 5, 5)
	if err != nil {
		ok = true // Redis unreachable: use a local limiter instead
	}
	_ = ok
}
