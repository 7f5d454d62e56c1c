package pipeline

import (
	"slices"
	"testing"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/tiers"
)

func TestObserverEvents(t *testing.T) {
	rec := &recorder{}
	primary := tier("primary", tiers.SourcePrimary, fails(tiers.KindServer))
	p, clk := newTestPipeline(t, Options{Observer: rec, Tiers: []Stage{
		{Tier: primary, Model: true, Breaker: breaker.Config{FailureThreshold: 1}},
		{Tier: tier("static", tiers.SourceStatic, answers("sorry"))}}})
	res := ask(t, p, "q")

	att := rec.kinds(EventAttempt)
	if len(att) != 2 || att[0].Attempt.Outcome != "server_error" || att[0].Tier != "primary" || att[0].Tenant != "acme" ||
		att[1].Attempt.Outcome != OutcomeSuccess || !att[0].Time.Equal(clk.Now()) {
		t.Fatalf("attempt events = %+v", att)
	}
	ans := rec.kinds(EventAnswered)
	if len(ans) != 1 || ans[0].Result != res || ans[0].Tier != "static" {
		t.Fatalf("answered events = %+v", ans)
	}
	br := rec.kinds(EventBreaker)
	if len(br) != 1 || br[0].Breaker != "tier/primary" || br[0].From != breaker.StateClosed || br[0].To != breaker.StateOpen {
		t.Fatalf("breaker events = %+v", br)
	}
	var names []string
	for _, s := range p.Status().Breakers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"tier/primary", "tier/static"}) {
		t.Fatalf("status breakers = %v", names)
	}
}
