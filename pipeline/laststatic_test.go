package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// TestStaticTierIgnoresItsBreaker: a static tier is the answer of last
// resort, so a pipeline ending in one never returns ErrExhausted, even
// when the static tier's breaker was tripped through Breakers() (or by
// another instance sharing the breaker store). A model tier's tripped
// breaker still takes it out of the chain.
func TestStaticTierIgnoresItsBreaker(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindServer))
	p, _ := newTestPipeline(t, Options{Tiers: []Stage{
		{Tier: primary, Model: true},
		{Tier: tiers.NewStatic("static", "Sorry, try later.")},
	}})
	for _, name := range []string{"tier/primary", "tier/static"} {
		b, ok := p.Breakers().Lookup(name)
		if !ok {
			t.Fatalf("no breaker %s", name)
		}
		b.Trip()
	}
	res, err := p.Ask(context.Background(), tiers.Query{Tenant: "acme", Question: "anything?"})
	if err != nil {
		t.Fatalf("Ask with tier/static tripped: %v, want the static answer", err)
	}
	if res.Source != tiers.SourceStatic || res.Text != "Sorry, try later." {
		t.Errorf("answer %q from %s, want the static message", res.Text, res.Source)
	}
	if n := primary.calls.Load(); n != 0 {
		t.Errorf("primary called %d times with its breaker open, want 0", n)
	}
	want := []string{OutcomeBreakerOpen, OutcomeSuccess}
	if len(res.Attempts) != len(want) {
		t.Fatalf("attempts %+v, want outcomes %v", res.Attempts, want)
	}
	for i, a := range res.Attempts {
		if a.Outcome != want[i] {
			t.Errorf("attempt %d (%s): outcome %s, want %s", i, a.Tier, a.Outcome, want[i])
		}
	}
}

// TestStaticTierHasNoReserve: a tier whose source is static, whatever its
// type, answers at once: the tiers before it keep back no time for it.
func TestStaticTierHasNoReserve(t *testing.T) {
	primary := tier("primary", tiers.SourcePrimary, answers("ok"))
	static := tier("static", tiers.SourceStatic, answers("sorry"))
	p, _ := newTestPipeline(t, Options{RequestTimeout: 10 * time.Second, Tiers: []Stage{{Tier: primary}, {Tier: static}}})
	ask(t, p, "q")
	if g := primary.given()[0]; g < 9900*time.Millisecond {
		t.Errorf("primary was given %v of a 10s budget with only a static tier after it", g)
	}
}
