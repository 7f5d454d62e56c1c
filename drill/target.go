package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/api"
)

// maxAnswerBytes bounds the answer body read from a target.
const maxAnswerBytes = 1 << 20

// Causes of a question a target did not answer, besides "HTTP <status>".
const (
	causeNotSent    = "request not sent"
	causeTimeout    = "no answer in time"
	causeConnection = "connection error"
	causeBadAnswer  = "unreadable answer"
)

// runTarget drives a running server's POST /v1/ask with the scenario's
// load, telling pg. Faults are not injected: the target's upstream is its
// own.
func runTarget(ctx context.Context, o Options, questions []string, speed float64, pg *progress) (*trace, error) {
	sc := o.Scenario
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	url := strings.TrimSuffix(o.Target, "/") + "/v1/ask"
	ask := func(ctx context.Context, i int) outcome {
		q := queryFor(sc, questions, i)
		ar := api.AskRequest{SessionID: q.Session, Question: q.Question}
		if o.APIKey == "" {
			ar.TenantID = q.Tenant // with a key, the key decides
		}
		body, err := json.Marshal(ar)
		if err != nil {
			return outcome{source: sourceError, cause: causeNotSent}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return outcome{source: sourceError, cause: causeNotSent}
		}
		req.Header.Set("Content-Type", "application/json")
		if o.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+o.APIKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return outcome{source: sourceError, cause: causeTimeout}
			}
			return outcome{source: sourceError, cause: causeConnection}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes)) // keep the connection
			return outcome{source: sourceError, cause: "HTTP " + strconv.Itoa(resp.StatusCode)}
		}
		var out api.AskResponse
		if json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&out) != nil || out.Source == "" {
			return outcome{source: sourceError, cause: causeBadAnswer}
		}
		return outcome{source: string(out.Source)}
	}
	load := scaledLoad(sc.Load, speed)
	start := time.Now()
	cs := clockScale{zero: start.Add(load.Warmup), speed: speed}
	smp := startSampler(samplePeriod)
	pg.begin(start, nil)
	results := drive(ctx, load, start, time.Minute, pg.counting(ask))
	pg.end()
	tr := &trace{setting: SettingTarget, overHTTP: true,
		note: "Driven over HTTP: the scenario's faults are not injected, and the target's upstream calls, tokens and breaker transitions are not visible to the drill; goroutines and heap are the drill's own."}
	tr.peakG, tr.peakHeap = smp.finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tr.samples = cs.samples(results)
	return tr, nil
}
