// Package browsertest drives a page in headless Chromium from Go tests,
// through github.com/chromedp/chromedp, and fails the test on anything
// the page writes to its console as an error: a console.error or
// console.assert call, an uncaught exception or unhandled rejection, a
// failed load (unless the test expects it) or a refused content policy.
//
// Chromium runs with --headless --no-sandbox --disable-gpu --disable-quic
// --no-first-run --disable-background-networking
// --disable-component-update --disable-sync and a new, empty
// --user-data-dir, so that it opens no connection of its own. It is found
// as chromium (or chromium-browser, google-chrome) on PATH, or at
// RAGFUSE_CHROMIUM. Without one, New skips the test, unless
// RAGFUSE_REQUIRE_BROWSER is set (as .ci/run sets it): then it fails.
//
//	b := browsertest.New(t)
//	b.Open(url+"/console", "#chain .tier")
//	b.Click(`#faults button[data-fault="hang"]`)
//	b.WaitText(`#chat-log .answer [data-role="badge"]`, "fallback")
//
// Every step is bounded by StepTimeout.
package browsertest
