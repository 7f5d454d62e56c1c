package pipeline

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/tiers"
)

// TestDescribeHidesURLSecrets: an Attempt's Error names the endpoint of a
// failed connection, without the password or query of its URL (net/http
// hides only the password).
func TestDescribeHidesURLSecrets(t *testing.T) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		"http://user:pw-secret@127.0.0.1:1/v1/chat/completions?api-key=sk-secret#frag", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = http.DefaultClient.Do(req)
	if err == nil {
		t.Fatal("a call to port 1 succeeded")
	}
	got := describe(&tiers.Error{Kind: tiers.KindConnection, Err: err})
	if strings.Contains(got, "secret") || strings.Contains(got, "frag") {
		t.Errorf("describe = %q: it shows a secret of the URL", got)
	}
	if !strings.HasPrefix(got, "Post http://127.0.0.1:1/v1/chat/completions: ") || !strings.Contains(got, "refused") {
		t.Errorf("describe = %q, want the method, the endpoint and the cause", got)
	}
	if got := describe(errors.New("plain")); got != "plain" {
		t.Errorf("describe(plain) = %q", got)
	}
}
