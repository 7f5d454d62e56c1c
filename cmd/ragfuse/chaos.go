package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// runChaos serves the fault-injecting upstream as a process until ctx is
// done (SIGINT/SIGTERM).
func runChaos(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("chaos", "[--addr ADDR] [--models a,b] [--chunk-delay D] [--embedding-dim N] [--faults model=mode,...]", e)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address")
	models := fs.String("models", "", "comma-separated models to serve; empty serves any model name")
	chunkDelay := fs.Duration("chunk-delay", 20*time.Millisecond, "pause between streamed chunks")
	dim := fs.Int("embedding-dim", 256, "length of embedding vectors")
	faults := fs.String("faults", "", "initial faults, e.g. chaos-primary=hang,chaos-fallback=status:503 (see serve --help)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dim <= 0 || *dim > llmtest.MaxEmbeddingDim || *chunkDelay < 0 {
		fmt.Fprintf(e.stderr, "--embedding-dim must be in 1..%d and --chunk-delay not negative\n", llmtest.MaxEmbeddingDim)
		fs.Usage()
		return errUsage
	}
	initial, err := parseFaults(*faults)
	if err != nil {
		fmt.Fprintf(e.stderr, "--faults: %v\n", err)
		return errUsage
	}
	cfg := llmtest.Config{ChunkDelay: *chunkDelay, EmbeddingDim: *dim}
	if *models != "" {
		for m := range strings.SplitSeq(*models, ",") {
			if m = strings.TrimSpace(m); m != "" {
				cfg.Models = append(cfg.Models, m)
			}
		}
	}
	if err := servedFaults(initial, cfg.Models); err != nil {
		fmt.Fprintf(e.stderr, "--faults: %v\n", err)
		return errUsage
	}
	srv := llmtest.New(cfg)
	for _, f := range initial {
		srv.SetFault(f.model, f.fault)
	}
	if err := srv.StartAt(*addr); err != nil {
		return err
	}
	defer srv.Close()

	base := strings.TrimSuffix(srv.URL, "/v1")
	w := e.stdout
	fmt.Fprintf(w, "ragfuse chaos: OpenAI-compatible upstream with fault injection at %s\n", srv.URL)
	fmt.Fprintln(w, "  endpoints: POST /v1/chat/completions, /v1/embeddings, /v1/rerank; GET /v1/models")
	if len(cfg.Models) > 0 {
		fmt.Fprintf(w, "  models: %s\n", strings.Join(cfg.Models, ", "))
	} else {
		fmt.Fprintln(w, "  models: any name; answers start with \"[model] \"")
	}
	fmt.Fprintln(w, "  control API:")
	fmt.Fprintf(w, "    curl -s %s/_llmtest/faults\n", base)
	fmt.Fprintf(w, "    curl -s -X PUT %s/_llmtest/faults/MODEL -H 'Content-Type: application/json' -d '{\"mode\":\"hang\"}'\n", base)
	fmt.Fprintf(w, "    curl -s -X DELETE %s/_llmtest/faults\n", base)
	fmt.Fprintf(w, "    curl -s %s/_llmtest/stats\n", base)
	fmt.Fprintln(w, "  rerank:")
	fmt.Fprintf(w, "    curl -s %s/rerank -d '{\"model\":\"rerank\",\"query\":\"refund\",\"documents\":[\"refund policy\",\"shipping\"]}'\n", srv.URL)
	fmt.Fprintf(w, "  modes: %s\n", modeList())
	fmt.Fprintln(w, "  stop with Ctrl-C")

	<-ctx.Done()
	fmt.Fprintln(w, "ragfuse chaos: stopping")
	return nil
}

// servedFaults refuses a fault for a model outside models (when models
// lists any): no request would ever meet it. Faults are keyed by the model
// name a request carries, which for ragfuse is the model field of a
// config.models entry, not the entry's key.
func servedFaults(faults []modelFault, models []string) error {
	if len(models) == 0 {
		return nil
	}
	for _, f := range faults {
		if f.model != llmtest.AnyModel && !slices.Contains(models, f.model) {
			return fmt.Errorf("model %q is not served (--models %s); a fault is keyed by the model name a request carries (the model: field of a config.models entry)",
				f.model, strings.Join(models, ","))
		}
	}
	return nil
}

func modeList() string {
	ms := make([]string, len(llmtest.Modes))
	for i, m := range llmtest.Modes {
		ms[i] = string(m)
	}
	return strings.Join(ms, ", ")
}
