package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/api"
)

// maxAnswerBytes bounds the answer body read from a target.
const maxAnswerBytes = 1 << 20

// runTarget drives a running server's POST /v1/ask with the scenario's
// load. Faults are not injected: the target's upstream is its own.
func runTarget(ctx context.Context, o Options, questions []string, speed float64) (*trace, error) {
	sc := o.Scenario
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	url := strings.TrimSuffix(o.Target, "/") + "/v1/ask"
	ask := func(ctx context.Context, i int) string {
		q := queryFor(sc, questions, i)
		body, err := json.Marshal(api.AskRequest{TenantID: q.Tenant, SessionID: q.Session, Question: q.Question})
		if err != nil {
			return sourceError
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return sourceError
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return sourceError
		}
		defer resp.Body.Close()
		var out api.AskResponse
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&out) != nil || out.Source == "" {
			return sourceError
		}
		return string(out.Source)
	}
	load := scaledLoad(sc.Load, speed)
	start := time.Now()
	cs := clockScale{zero: start.Add(load.Warmup), speed: speed}
	smp := startSampler(samplePeriod)
	results := drive(ctx, load, start, time.Minute, ask)
	tr := &trace{setting: SettingTarget, note: "Driven over HTTP: the target's upstream counters and breaker transitions are not visible to the drill; goroutines and heap are the drill's own."}
	tr.peakG, tr.peakHeap = smp.finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tr.samples = cs.samples(results)
	return tr, nil
}
