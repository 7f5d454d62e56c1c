package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/tiers"
)

// maxTransitionRows bounds the transitions listed per setting.
const maxTransitionRows = 20

// sourceOrder is the order sources are listed in.
var sourceOrder = []string{string(tiers.SourceCache), string(tiers.SourcePrimary), string(tiers.SourceFallback),
	string(tiers.SourceStaleCache), string(tiers.SourceRetrieval), string(tiers.SourceStatic), sourceError}

// WriteJSON writes r as compact JSON; durations are in nanoseconds and
// each sample is an array [at, latency, source].
func WriteJSON(w io.Writer, r *Report) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteMarkdown writes r as Markdown: a table with one column per
// setting, the goals, and the breaker transitions.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Drill: %s\n\n", r.Scenario)
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(r.Description))
	}
	fmt.Fprintf(&b, "%s measured after a %s warm-up", dur(r.Duration), dur(r.Warmup))
	if r.Speed != 1 && r.Speed > 0 {
		fmt.Fprintf(&b, ", run at speed %g (times are scenario time: measured, multiplied by %g)", r.Speed, r.Speed)
	}
	b.WriteString(".\n")
	if r.Target != "" {
		fmt.Fprintf(&b, "Driven over HTTP against %s: the scenario's faults are not injected, and what happens behind "+
			"the server (calls and tokens to its models, its breakers) is not measured.\n", r.Target)
	}
	if len(r.Faults) > 0 {
		b.WriteString("Failing: ")
		for i, f := range r.Faults {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s %s from %s to %s", f.Model, f.Mode, dur(f.Start), dur(f.End))
		}
		b.WriteString(".\n")
	}
	b.WriteString("\n")
	for _, s := range r.Settings {
		for _, w := range s.Warnings {
			fmt.Fprintf(&b, "**Warning (%s): %s**\n\n", s.Setting, w)
		}
	}
	markdownTable(&b, r)
	markdownGoals(&b, r)
	markdownTransitions(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func markdownTable(b *strings.Builder, r *Report) {
	row := func(name string, cell func(s *SettingReport) string) {
		b.WriteString("| " + name + " |")
		for _, s := range r.Settings {
			b.WriteString(" " + cell(s) + " |")
		}
		b.WriteString("\n")
	}
	tableHead(b, r, "| |", "|---|", "---:|")
	row("questions", func(s *SettingReport) string { return fmt.Sprint(s.Questions) })
	for _, src := range sourcesOf(r) {
		name := "answered by " + src
		if src == sourceError {
			name = "not answered"
		}
		row(name, func(s *SettingReport) string { return fmt.Sprint(s.BySource[src]) })
	}
	for _, c := range causesOf(r) {
		row("not answered: "+c, func(s *SettingReport) string { return fmt.Sprint(s.Errors[c]) })
	}
	// upstream shows a figure of what happens behind the pipeline, which a
	// drill over HTTP cannot see.
	upstream := func(cell func(s *SettingReport) string) func(s *SettingReport) string {
		return func(s *SettingReport) string {
			if s.OverHTTP {
				return naHTTP
			}
			return cell(s)
		}
	}
	row("availability (model or cache)", func(s *SettingReport) string { return percent(s.Availability) })
	row("answered at all", func(s *SettingReport) string { return percent(s.Answered) })
	row("latency p50 / p95 / p99", func(s *SettingReport) string {
		return ms(s.Latency.P50) + " / " + ms(s.Latency.P95) + " / " + ms(s.Latency.P99)
	})
	row("p99 while failing", upstream(func(s *SettingReport) string { return orNA(s.FaultLatency.N > 0, s.FaultLatency.P99) }))
	row("fallback's healthy p99", upstream(func(s *SettingReport) string { return orNA(s.FallbackP99 > 0, s.FallbackP99) }))
	row("calls to failing models", upstream(func(s *SettingReport) string { return fmt.Sprint(s.FailingCalls) }))
	row("tokens to failing models", upstream(func(s *SettingReport) string {
		return fmt.Sprintf("%d of %d (%s)", s.FailingTokens, s.Tokens, percent(s.Waste))
	}))
	row("breaker transitions", upstream(func(s *SettingReport) string { return fmt.Sprint(len(s.Transitions)) }))
	row("calls per open period", upstream(func(s *SettingReport) string {
		if len(s.OpenPeriods) == 0 {
			return "never opened"
		}
		parts := make([]string, len(s.OpenPeriods))
		for i, p := range s.OpenPeriods {
			parts[i] = fmt.Sprint(p.Calls)
		}
		return strings.Join(parts, ", ")
	}))
	if len(r.Settings) > 0 && r.Settings[0].FirstWave != nil {
		firstWaveRows(row)
	}
	own := func(s *SettingReport) string {
		if s.OverHTTP {
			return " (the drill's own)"
		}
		return ""
	}
	row("peak goroutines", func(s *SettingReport) string { return fmt.Sprint(s.PeakGoroutines) + own(s) })
	row("peak heap", func(s *SettingReport) string {
		return fmt.Sprintf("%.1f MiB", float64(s.PeakHeap)/(1<<20)) + own(s)
	})
	b.WriteString("\n")
}

// tableHead writes the head of a table with a column per setting: lead
// and then the settings' names, and the rule line, lead's rule and then
// rule per setting.
func tableHead(b *strings.Builder, r *Report, lead, leadRule, rule string) {
	b.WriteString(lead)
	for _, s := range r.Settings {
		b.WriteString(" " + s.Setting + " |")
	}
	b.WriteString("\n" + leadRule)
	for range r.Settings {
		b.WriteString(rule)
	}
	b.WriteString("\n")
}

func markdownGoals(b *strings.Builder, r *Report) {
	if len(r.Settings) == 0 {
		return
	}
	b.WriteString("## Goals\n\n")
	tableHead(b, r, "| goal | want |", "|---|---|", "---|")
	for i, g := range r.Settings[0].Goals {
		fmt.Fprintf(b, "| %s | %s |", g.Name, g.Want)
		for _, s := range r.Settings {
			if i >= len(s.Goals) {
				b.WriteString(" |")
				continue
			}
			g := s.Goals[i]
			switch {
			case g.Unmeasured:
				fmt.Fprintf(b, " %s |", g.Got)
			case g.Met:
				fmt.Fprintf(b, " met: %s |", g.Got)
			default:
				fmt.Fprintf(b, " missed: %s |", g.Got)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func markdownTransitions(b *strings.Builder, r *Report) {
	b.WriteString("## Breaker transitions\n")
	for _, s := range r.Settings {
		fmt.Fprintf(b, "\n### %s\n\n", s.Setting)
		if s.Note != "" {
			fmt.Fprintf(b, "%s\n\n", s.Note)
		}
		switch {
		case s.OverHTTP:
			b.WriteString("Not visible over HTTP.\n")
			continue
		case len(s.Transitions) == 0:
			b.WriteString("None.\n")
			continue
		}
		b.WriteString("| at | breaker | from | to |\n|---:|---|---|---|\n")
		for i, t := range s.Transitions {
			if i == maxTransitionRows {
				fmt.Fprintf(b, "\n… and %d more.\n", len(s.Transitions)-i)
				break
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", dur(t.At), t.Key, t.From, t.To)
		}
	}
}

// causesOf returns the causes of unanswered questions in any setting,
// sorted.
func causesOf(r *Report) []string {
	var out []string
	for _, s := range r.Settings {
		for c := range s.Errors {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// sourcesOf returns the sources seen in any setting, in sourceOrder.
func sourcesOf(r *Report) []string {
	seen := map[string]bool{}
	for _, s := range r.Settings {
		for src, n := range s.BySource {
			if n > 0 {
				seen[src] = true
			}
		}
	}
	var out []string
	for _, src := range sourceOrder {
		if seen[src] {
			out = append(out, src)
			delete(seen, src)
		}
	}
	extra := make([]string, 0, len(seen))
	for src := range seen {
		extra = append(extra, src)
	}
	slices.Sort(extra)
	return append(out, extra...)
}

func percent(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func orNA(ok bool, d time.Duration) string {
	if !ok {
		return "n/a"
	}
	return ms(d)
}

// dur formats a scenario time: seconds with at most one decimal.
func dur(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
}
