package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// modelFault is one model=mode[:arg] item of a --faults list.
type modelFault struct {
	model string
	fault llmtest.Fault
}

// faultSyntax documents the --demo-faults and --faults values.
const faultSyntax = `model=mode[:arg],... where mode is one of ok, latency[:DURATION] (default 3s), hang,
status[:CODE], rate_limit[:DURATION], reset, break[:CHUNKS], stall[:DURATION],
malformed[:CHUNKS], empty`

// parseFaults parses "demo-primary=hang,demo-fallback=status:503".
func parseFaults(spec string) ([]modelFault, error) {
	var out []modelFault
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		model, mode, ok := strings.Cut(item, "=")
		if !ok || model == "" || mode == "" {
			return nil, fmt.Errorf("%q: want %s", item, faultSyntax)
		}
		f, err := parseFault(mode)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", model, err)
		}
		out = append(out, modelFault{model: model, fault: f})
	}
	return out, nil
}

// parseFault parses "mode[:arg]".
func parseFault(s string) (llmtest.Fault, error) {
	mode, arg, hasArg := strings.Cut(s, ":")
	f := llmtest.Fault{Mode: llmtest.Mode(mode)}
	var err error
	switch f.Mode {
	case llmtest.ModeLatency, llmtest.ModeStall:
		if hasArg {
			f.Delay, err = time.ParseDuration(arg)
		} else if f.Mode == llmtest.ModeLatency {
			f.Delay = 3 * time.Second
		}
	case llmtest.ModeRateLimit:
		if hasArg {
			f.RetryAfter, err = time.ParseDuration(arg)
		}
	case llmtest.ModeStatus:
		if hasArg {
			f.Status, err = strconv.Atoi(arg)
		}
	case llmtest.ModeBreak, llmtest.ModeMalformed:
		if hasArg {
			f.After, err = strconv.Atoi(arg)
		}
	default:
		if hasArg {
			return f, fmt.Errorf("mode %q takes no argument", mode)
		}
	}
	if err != nil {
		return f, fmt.Errorf("mode %s: bad argument %q", mode, arg)
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("%w (modes: %s)", err, modeList())
	}
	return f, nil
}
