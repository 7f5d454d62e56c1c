package drill

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// upstream is the drill's in-process model service: an llmtest.Server
// mounted under /m/<key>/ per configured model, so that every chat call is
// recorded with its model and arrival time. It is safe for concurrent use.
type upstream struct {
	llm  *llmtest.Server
	hs   *http.Server
	base string // "http://127.0.0.1:PORT"
	done chan struct{}

	mu       sync.Mutex // guards arrivals
	arrivals []arrivalTime
}

// arrivalTime is a chat call received, in real time.
type arrivalTime struct {
	at    time.Time
	model string // the config.models key
}

// newUpstream starts an upstream serving the models keyed by keys.
func newUpstream(keys []string) (*upstream, error) {
	u := &upstream{llm: llmtest.New(llmtest.Config{}), done: make(chan struct{})}
	mux := http.NewServeMux()
	for _, k := range keys {
		prefix := "/m/" + k
		inner := http.StripPrefix(prefix, u.llm)
		mux.Handle(prefix+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
				u.mu.Lock()
				u.arrivals = append(u.arrivals, arrivalTime{at: time.Now(), model: k})
				u.mu.Unlock()
			}
			inner.ServeHTTP(w, r)
		}))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		u.llm.Close()
		return nil, err
	}
	u.base = "http://" + ln.Addr().String()
	u.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(u.done)
		_ = u.hs.Serve(ln) // ends with http.ErrServerClosed on close
	}()
	return u, nil
}

// baseURL returns the OpenAI base URL of the model keyed k.
func (u *upstream) baseURL(k string) string { return u.base + "/m/" + k + "/v1" }

// takeArrivals returns the calls recorded so far.
func (u *upstream) takeArrivals() []arrivalTime {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]arrivalTime(nil), u.arrivals...)
}

// close releases hung handlers, then stops the server.
func (u *upstream) close() {
	u.llm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.hs.Shutdown(ctx); err != nil {
		u.hs.Close()
	}
	<-u.done
}
