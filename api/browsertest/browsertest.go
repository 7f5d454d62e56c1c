package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The environment variables New reads, and the bound of each step.
const (
	EnvChromium       = "RAGFUSE_CHROMIUM"        // the Chromium to run; default: chromium (or chromium-browser, google-chrome) on PATH
	EnvRequireBrowser = "RAGFUSE_REQUIRE_BROWSER" // set: a missing Chromium fails the test instead of skipping it
	StepTimeout       = 15 * time.Second          // each action, wait or evaluation
)

// chromiumPath returns the Chromium to run, or ends the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	if p := os.Getenv(EnvChromium); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequireBrowser) != "" {
		t.Fatalf("no Chromium found (tried %s) and %s is set: install it (apt-get install -y chromium)",
			strings.Join(names, ", "), EnvRequireBrowser)
	}
	t.Skipf("no Chromium found (tried %s); set %s=1 to fail instead", strings.Join(names, ", "), EnvRequireBrowser)
	return ""
}

// Browser is one page of a headless Chromium. It fails its test on any
// console error, uncaught exception or failed load the test did not
// expect. It is used by one test's goroutine.
type Browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	expected []string // URL parts whose failed loads the test expects
}

// New starts Chromium with a new, empty profile and no network traffic of
// its own (no background, component or sync requests), 1280x1000, and
// closes it when the test ends, failing the test for the problems the
// page had (see Check). Without a Chromium it skips the test, or fails it
// when EnvRequireBrowser is set. Start the servers the page talks to
// before New: cleanups run last-registered first, so the browser then
// closes before its servers, and their closing is no problem of the page.
func New(t *testing.T) *Browser {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.ctx = ctx
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx)
		cancel()
		cancelAlloc()
		b.Check()
	})
	// The first action starts the browser, which lives as long as the
	// context of that action: give it b.ctx, not one with a deadline.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// listen records the page's problems. It runs in the tab's event loop.
func (b *Browser) listen(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			problem = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		problem = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, d.Text)
		if d.Exception != nil {
			problem += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		if e := ev.Entry; e.Level == log.EntryLevelError {
			if e.Source == log.EntrySourceNetwork && b.expectedLoad(e.URL) {
				return
			}
			problem = fmt.Sprintf("%s error: %s (%s)", e.Source, e.Text, e.URL)
		}
	}
	if problem != "" {
		b.mu.Lock()
		b.problems = append(b.problems, problem)
		b.mu.Unlock()
	}
}

// ExpectFailedLoad lets loads of URLs holding part fail (a refused admin
// action, say) without failing the test.
func (b *Browser) ExpectFailedLoad(part string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, part)
}

func (b *Browser) expectedLoad(url string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.expected {
		if strings.Contains(url, p) {
			return true
		}
	}
	return false
}

// Problems returns the page's problems so far, and forgets them.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// Check fails the test for every problem the page had so far: a
// console.error or console.assert call, an uncaught exception or
// unhandled rejection, or an error of the browser's log (a failed load
// not expected by ExpectFailedLoad, a refused policy).
func (b *Browser) Check() {
	b.t.Helper()
	for _, p := range b.Problems() {
		b.t.Errorf("page: %s", p)
	}
}

// Do runs actions, failing the test on an error or after StepTimeout.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.Check()
		b.t.Fatal(err)
	}
}

// Open loads url and waits until the element the CSS selector ready
// finds is visible.
func (b *Browser) Open(url, ready string) {
	b.t.Helper()
	b.Do(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready)))
	b.Check()
}

// Eval returns the value of a JavaScript expression in b's page.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// Text returns the trimmed text of the first element sel finds, "" if none.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").trim()`, quoteJS(sel)))
}

// WaitText waits until the text of the first element sel finds is want.
func (b *Browser) WaitText(sel, want string) {
	b.t.Helper()
	expr := fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").trim() === %s`, quoteJS(sel), quoteJS(want))
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.Check()
		b.t.Fatalf("%s never read %q (it reads %q): %v", sel, want, b.Text(sel), err)
	}
}

// Click clicks the first element sel finds.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	b.Do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// TypeInto sets the value of the input sel finds, as typing would.
func (b *Browser) TypeInto(sel, text string) {
	b.t.Helper()
	Eval[bool](b, fmt.Sprintf(`(document.querySelector(%s).value = "") === ""`, quoteJS(sel)))
	b.Do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// Screenshot returns a PNG of the whole page.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

func quoteJS(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
