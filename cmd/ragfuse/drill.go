package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragfuse/ragfuse/config"
	"github.com/ragfuse/ragfuse/drill"
)

// drillFlags names the flag of each drill.Options field, for its errors.
var drillFlags = map[string]string{"speed": "--speed", "settings": "--settings", "target": "--target", "api_key": "--api-key-env"}

// runDrill plays a fault scenario and writes report.json, report.md and
// report.png into --out; it prints the Markdown report, and to stderr a
// progress line every few seconds and the paths it wrote. Over HTTP
// (--target) it fails, after writing the report, when every question
// failed.
func runDrill(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("drill", "--scenario FILE --out DIR [--speed N] [--settings none,breaker,full | --target URL [--api-key-env NAME]]", e)
	scenario := fs.String("scenario", "", "scenario file (YAML), e.g. testdata/scenarios/primary-outage.yaml")
	out := fs.String("out", "", "directory for report.json, report.md and report.png")
	speed := fs.Float64("speed", 1, fmt.Sprintf("divide every duration of the scenario by N (and multiply its rates); at most %d", drill.MaxSpeed))
	settings := fs.String("settings", strings.Join(drill.DefaultSettings, ","), "protection settings to play, one after another, of none, breaker, full and hedged (default: the first three, and hedged when the scenario hedges a tier; not with --target)")
	target := fs.String("target", "", "base URL of a running ragfuse server to drive over HTTP instead (the scenario's faults are not injected)")
	keyEnv := fs.String("api-key-env", "", "with --target: the environment variable holding an API key of the server (auth.keys), sent as a bearer token; the key decides the tenant")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usage := func(msg string) error {
		fmt.Fprintln(e.stderr, msg)
		fs.Usage()
		return errUsage
	}
	if *scenario == "" || *out == "" || !(*speed > 0) { // !(> 0) refuses NaN too
		return usage("--scenario and --out are required, and --speed must be positive")
	}
	opts := drill.Options{Speed: *speed, Target: *target}
	if set["settings"] {
		for s := range strings.SplitSeq(*settings, ",") {
			if s = strings.TrimSpace(s); s != "" {
				opts.Settings = append(opts.Settings, s)
			}
		}
		if len(opts.Settings) == 0 {
			return usage("--settings: name at least one of " + strings.Join(drill.AllSettings, ", "))
		}
	}
	if err := opts.Check(); err != nil {
		var oe *drill.OptionError
		if errors.As(err, &oe) {
			return usage(drillFlags[oe.Option] + " " + oe.Msg)
		}
		return err
	}
	if set["api-key-env"] {
		switch {
		case *target == "":
			return usage("--api-key-env needs --target: an in-process drill asks no server")
		case !config.EnvName(*keyEnv): // the key itself, pasted by mistake, is not repeated
			return usage("--api-key-env " + config.NotEnvName)
		}
		if opts.APIKey = strings.TrimSpace(e.getenv(*keyEnv)); opts.APIKey == "" {
			return fmt.Errorf("--api-key-env: environment variable %s is empty or unset", *keyEnv)
		}
	}
	sc, err := drill.LoadScenario(*scenario)
	if err != nil {
		return err
	}
	opts.Scenario = sc
	opts.Progress = e.stderr
	rep, err := drill.Run(ctx, opts)
	if err != nil {
		return err
	}
	var md bytes.Buffer
	if err := drill.WriteMarkdown(&md, rep); err != nil {
		return err
	}
	paths, err := writeReport(*out, rep, md.Bytes())
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "ragfuse drill: wrote %s\n", strings.Join(paths, ", "))
	if _, err := e.stdout.Write(md.Bytes()); err != nil {
		return err
	}
	if *target != "" {
		return allFailed(rep, opts.APIKey != "", *out)
	}
	return nil
}

// writeReport writes report.md (md, rep in Markdown), report.json and
// report.png into dir and returns their paths.
func writeReport(dir string, rep *drill.Report, md []byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var js, img bytes.Buffer
	if err := drill.WriteJSON(&js, rep); err != nil {
		return nil, err
	}
	if err := drill.WritePNG(&img, rep); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name string
		b    []byte
	}{{"report.md", md}, {"report.json", js.Bytes()}, {"report.png", img.Bytes()}} {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.b, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// allFailed returns an error naming the causes when no question of rep
// was answered, nil otherwise. withKey says whether an API key was sent.
func allFailed(rep *drill.Report, withKey bool, dir string) error {
	for _, s := range rep.Settings {
		if !s.AllFailed() {
			continue
		}
		msg := fmt.Sprintf("every one of the %d questions failed", s.Questions)
		if c := s.Causes(); c != "" {
			msg += " (" + c + ")"
		}
		if s.Errors["HTTP 401"] > 0 || s.Errors["HTTP 403"] > 0 {
			if withKey {
				msg += "; the server refused the API key, or the key's tenant"
			} else {
				msg += "; the server wants an API key: pass --api-key-env NAME"
			}
		}
		return fmt.Errorf("%s; the report is in %s", msg, dir)
	}
	return nil
}
