package tiers

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// directDoer sends a model call straight through its http.Client's
// Transport, with what Client.Do would do to it otherwise: the error
// wrapped in a *url.Error naming the method and the URL (its password
// hidden), and an HTTP answer from an HTTPS endpoint named as such.
//
// Client.Do's other work is for redirects and cookies, which a call to an
// OpenAI-compatible API does not meet: it clones the request's headers for
// the redirects to come, and keeps the requests it sent. That bookkeeping
// costs about 2% of a call to a model that answers at once
// (BenchmarkUpstream in package pipeline), more than the pipeline's guards
// around the call. What would need it still goes through Client.Do:
//   - a client with a cookie jar or a Timeout, and a URL that carries user
//     information (Client.Do turns it into Basic authentication);
//   - a request whose body cannot be sent again;
//   - after the endpoint first answers with a redirect, every request.
//     That request is sent again through Client.Do, which follows the
//     redirect as it would have (stripping the API key on the way to
//     another host); an endpoint acts on nothing it redirects.
type directDoer struct {
	hc         *http.Client
	redirected *atomic.Bool // set at the endpoint's first redirect
}

func newDirectDoer(hc *http.Client) directDoer {
	return directDoer{hc: hc, redirected: new(atomic.Bool)}
}

func (d directDoer) Do(req *http.Request) (*http.Response, error) {
	if d.hc.Jar != nil || d.hc.Timeout != 0 || d.redirected.Load() ||
		req.URL == nil || req.URL.User != nil ||
		req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return d.hc.Do(req)
	}
	rt := d.hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	res, err := rt.RoundTrip(req)
	if err == nil && res == nil {
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)
	}
	if err != nil {
		if rh, ok := err.(tls.RecordHeaderError); ok && string(rh.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	if res.Body == nil {
		res.Body = http.NoBody
	}
	if !isRedirect(res) {
		return res, nil
	}
	d.redirected.Store(true)
	// Drain a little of the body so that the connection can be used again.
	_, _ = io.CopyN(io.Discard, res.Body, 2<<10)
	res.Body.Close()
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
		}
	}
	return d.hc.Do(again)
}

// isRedirect reports whether Client.Do would follow res.
func isRedirect(res *http.Response) bool {
	switch res.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return res.Header.Get("Location") != ""
	}
	return false
}

// urlErrorOp is the Op of the *url.Error Client.Do returns for method.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}
