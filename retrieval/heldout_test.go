package retrieval_test

import "testing"

// TestRecallHeldout measures recall@3 of the lexical retriever on the
// held-out set beside the development set. The held-out set is never used
// for tuning, so its misses are not logged.
//
//	go test ./retrieval -run 'TestRecallHeldout' -v
func TestRecallHeldout(t *testing.T) {
	kb := openTestKB(t)
	dev := recallAt(t, kb, loadEval(t), 3)
	held := loadJSONL[evalCase](t, "kb-eval-heldout.jsonl")
	for _, c := range held {
		if _, ok := kb.Get(c.ID); !ok {
			t.Errorf("kb-eval-heldout.jsonl: %q names unknown article %q", c.Question, c.ID)
		}
	}
	r := recall(t, kb, held, 3, false)
	t.Logf("recall@3 dev = %.3f (zh %.3f, en %.3f); held-out = %.3f (zh %.3f, en %.3f) over %d questions",
		dev["all"], dev["zh"], dev["en"], r["all"], r["zh"], r["en"], len(held))
	if r["all"] < 0.85 || r["zh"] < 0.8 || r["en"] < 0.8 {
		t.Errorf("held-out recall@3 = %.3f (zh %.3f, en %.3f), want >= 0.85 and >= 0.80 per language", r["all"], r["zh"], r["en"])
	}
}
