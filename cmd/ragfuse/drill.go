package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragfuse/ragfuse/pipeline/drill"
)

// runDrill plays a fault scenario and writes report.json, report.md and
// report.png into --out; it prints the Markdown report.
func runDrill(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("drill", "--scenario FILE --out DIR [--speed N] [--settings none,breaker,full] [--target URL]", e)
	scenario := fs.String("scenario", "", "scenario file (YAML), e.g. testdata/scenarios/primary-outage.yaml")
	out := fs.String("out", "", "directory for report.json, report.md and report.png")
	speed := fs.Float64("speed", 1, "divide every duration of the scenario by N (and multiply its rates)")
	settings := fs.String("settings", strings.Join(drill.DefaultSettings, ","), "protection settings to play, one after another")
	target := fs.String("target", "", "base URL of a running ragfuse server to drive over HTTP instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *scenario == "" || *out == "" || !(*speed > 0) { // !(> 0) refuses NaN too
		fmt.Fprintln(e.stderr, "--scenario and --out are required, and --speed must be positive")
		fs.Usage()
		return errUsage
	}
	sc, err := drill.LoadScenario(*scenario)
	if err != nil {
		return err
	}
	var list []string
	for s := range strings.SplitSeq(*settings, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	rep, err := drill.Run(ctx, drill.Options{Scenario: sc, Settings: list, Speed: *speed, Target: *target})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := drill.WriteMarkdown(&md, rep); err != nil {
		return err
	}
	var js, img bytes.Buffer
	if err := drill.WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := drill.WritePNG(&img, rep); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"report.md": md.Bytes(), "report.json": js.Bytes(), "report.png": img.Bytes()} {
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			return err
		}
	}
	_, err = e.stdout.Write(md.Bytes())
	return err
}
