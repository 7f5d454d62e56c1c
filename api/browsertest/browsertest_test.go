package browsertest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// page is a page that writes one of each problem to its console once its
// button is clicked, and loads one URL the test expects to fail.
const page = `<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<p id="out">ready</p><button id="go">go</button>
<script>
document.getElementById("go").addEventListener("click", () => {
  console.log("a log line is no problem");
  console.error("something broke");
  fetch("/missing").catch(() => {});
  fetch("/expected-404").catch(() => {});
  setTimeout(() => { throw new Error("boom"); }, 0);
  document.getElementById("out").textContent = "clicked";
});
</script></body></html>`

func TestBrowserReportsPageProblems(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	b := New(t)
	b.ExpectFailedLoad("/expected-404")
	b.Open(srv.URL, "#go")
	if p := b.Problems(); len(p) != 0 {
		t.Fatalf("problems before the click: %q", p)
	}
	b.Click("#go")
	b.WaitText("#out", "clicked")
	if got := Eval[string](b, `document.title + "|" + document.getElementById("out").textContent`); got != "|clicked" {
		t.Errorf("Eval = %q", got)
	}
	var problems []string
	for end := time.Now().Add(StepTimeout); len(problems) < 3 && time.Now().Before(end); {
		Eval[bool](b, "true") // a round trip: the page's events before it have arrived
		problems = append(problems, b.Problems()...)
	}
	if len(problems) < 3 {
		t.Fatalf("problems %q, want three", problems)
	}
	slices.Sort(problems)
	want := []string{"console.error", "network error", "uncaught exception"}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d %q, want one starting %q (all: %q)", i, problems[i], w, problems)
		}
	}
	if len(problems) != 3 || strings.Contains(strings.Join(problems, " "), "expected-404") ||
		!strings.Contains(problems[1], "/missing") || !strings.Contains(problems[2], "boom") {
		t.Errorf("problems %q, want the three of the click and not the expected failed load", problems)
	}
}
