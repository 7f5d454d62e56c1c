package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	tenants := sc.Tenants
	if len(tenants) == 0 {
		tenants = []string{"drill"}
	}
	ask := func(ctx context.Context, i int) string {
		body, err := json.Marshal(map[string]string{
			"tenant_id":  tenants[(i/len(questions))%len(tenants)],
			"session_id": "drill-" + strconv.Itoa(i),
			"question":   questions[i%len(questions)],
		})
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
		var out struct {
			Source string `json:"source"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&out) != nil || out.Source == "" {
			return sourceError
		}
		return out.Source
	}
	warm := scaleDur(sc.Load.Warmup, speed)
	load := sc.Load
	load.Duration, load.Warmup = scaleDur(load.Duration, speed), warm
	if load.Rate > 0 {
		load.Rate *= speed
	}
	start := time.Now()
	cs := clockScale{zero: start.Add(warm), speed: speed}
	smp := startSampler(samplePeriod)
	results := drive(ctx, load, start, time.Minute, ask)
	tr := &trace{setting: SettingTarget, note: "Driven over HTTP: the target's upstream counters and breaker transitions are not visible to the drill; goroutines and heap are the drill's own."}
	tr.peakG, tr.peakHeap = smp.finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range results {
		tr.samples = append(tr.samples, sample{at: cs.at(r.sent), latency: cs.dur(r.latency), source: r.source})
	}
	return tr, nil
}
