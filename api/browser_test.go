package api

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

// The browser tests drive the console in headless Chromium. Without a
// Chromium on PATH (or at RAGFUSE_CHROMIUM) they skip, unless
// RAGFUSE_REQUIRE_BROWSER is set (as .ci/run sets it): then they fail.
const (
	envChromium        = "RAGFUSE_CHROMIUM"
	envRequireBrowser  = "RAGFUSE_REQUIRE_BROWSER"
	browserStepTimeout = 15 * time.Second
)

// chromiumPath returns the Chromium to run, or ends the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	if p := os.Getenv(envChromium); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv(envRequireBrowser) != "" {
		t.Fatalf("no Chromium found (tried %s) and %s is set: install it (apt-get install -y chromium)",
			strings.Join(names, ", "), envRequireBrowser)
	}
	t.Skipf("no Chromium found (tried %s); set %s=1 to fail instead", strings.Join(names, ", "), envRequireBrowser)
	return ""
}

// browser is one page of a headless Chromium. It fails its test on any
// console error, uncaught exception or failed load the test did not expect.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	expected []string // URL parts whose failed loads the test expects
}

// newBrowser starts Chromium with a new, empty profile, with no network
// access of its own (no background, component or sync traffic), and closes
// it when the test ends.
func newBrowser(t *testing.T) *browser {
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
	b := &browser{t: t}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.ctx = ctx
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx)
		cancel()
		cancelAlloc()
		b.check()
	})
	// The first action starts the browser, which lives as long as the
	// context of that action: give it b.ctx, not one with a deadline.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// listen records the page's problems. It runs in the tab's event loop.
func (b *browser) listen(ev any) {
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

// expectFailedLoad lets loads of URLs holding part fail (a refused admin
// action, say) without failing the test.
func (b *browser) expectFailedLoad(part string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, part)
}

func (b *browser) expectedLoad(url string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.expected {
		if strings.Contains(url, p) {
			return true
		}
	}
	return false
}

// check fails the test for every problem the page had so far.
func (b *browser) check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("page: %s", p)
	}
	b.problems = nil
}

// do runs actions, failing the test on an error or after
// browserStepTimeout.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.check()
		b.t.Fatal(err)
	}
}

// open loads url and waits for the page's script to have drawn the chain.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#chain .tier")))
	b.check()
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// text returns the trimmed text of the first element sel finds, "" if none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").trim()`, quoteJS(sel)))
}

// waitText waits until the text of the first element sel finds is want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	expr := fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").trim() === %s`, quoteJS(sel), quoteJS(want))
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.check()
		b.t.Fatalf("%s never read %q (it reads %q): %v", sel, want, b.text(sel), err)
	}
}

// click clicks the first element sel finds.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// typeInto sets the value of the input sel finds, as typing would.
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	eval[bool](b, fmt.Sprintf(`(document.querySelector(%s).value = "") === ""`, quoteJS(sel)))
	b.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// screenshot returns a PNG of the whole page.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
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
