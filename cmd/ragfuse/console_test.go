package main

import (
	"bytes"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragfuse/ragfuse/api/browsertest"
)

// envConsolePNG names the file TestDemoConsole writes its screenshot to
// (docs/console.png is made so; see README).
const envConsolePNG = "RAGFUSE_CONSOLE_PNG"

// TestDemoConsole drives the demo's web console in a browser, as a
// newcomer would: GET / leads to it, the chat panel asks, the fault
// switch makes the primary fail, and the page shows the next answers
// from the fallback and the primary's breaker open with why. It ends with
// a screenshot of the page, written to $RAGFUSE_CONSOLE_PNG when set.
func TestDemoConsole(t *testing.T) {
	var logs bytes.Buffer
	c := startDemo(t, &lockedWriter{w: &logs, started: make(chan struct{})})
	res, err := http.Get(c.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/console" || res.StatusCode != http.StatusOK {
		t.Fatalf("GET / ended at %s with %d, want the console", res.Request.URL, res.StatusCode)
	}

	b := browsertest.New(t)
	b.Open(c.url+"/", "#chain .tier")
	const badge = `#chat-log .answer:first-child [data-role="badge"]`
	ask := func(q, source string) {
		t.Helper()
		b.TypeInto("#chat-input", q)
		b.Click("#chat-send")
		b.WaitText(`#chat-log .answer:first-child .q`, q)
		b.WaitText(badge, source)
	}
	ask("How do I return an item?", "primary")
	b.Click(`#faults .fault[data-model="demo-primary"] button[data-fault="HTTP 503"]`)
	b.WaitText(`#faults .fault[data-model="demo-primary"] button[aria-pressed="true"]`, "HTTP 503")
	ask("How long does a refund take?", "fallback")
	ask("Can I change my delivery address?", "fallback")
	b.WaitText(`#breakers tr[data-breaker="model/demo-primary"] [data-role="state"]`, "open")
	b.WaitText(`#chain .tier[data-tier="primary"] [data-role="state"]`, "open")
	reason := b.Text(`#breakers tr[data-breaker="model/demo-primary"] [data-role="reason"]`)
	if want := "consecutive_failures: server_error — HTTP 503"; len(reason) < len(want) || reason[:len(want)] != want {
		t.Errorf("the primary's trip reason reads %q, want it to start %q", reason, want)
	}
	b.WaitText(`#questions tbody tr:first-child .badge`, "fallback")
	b.WaitText(`#questions tbody tr:first-child .muted`, "Can I change my delivery address?") // the demo shows the text
	if n := browsertest.Eval[int](b, `document.querySelectorAll("#chart rect[data-source]").length`); n == 0 {
		t.Error("the chart shows no answers")
	}
	b.Check()

	shot := b.Screenshot()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != 1280 || got.Y < 1000 {
		t.Errorf("screenshot %v, want 1280 wide", got)
	}
	out := filepath.Join(t.TempDir(), "console.png")
	if p := os.Getenv(envConsolePNG); p != "" {
		out = p
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
