package tiers

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// directDoer sends a model call straight through its http.Client's
// Transport, with what Client.Do would do to it otherwise: the error
// wrapped in a *url.Error naming the method and the URL (its password
// hidden), and an HTTP answer from an HTTPS endpoint named as such.
//
// Client.Do's other work is for redirects and cookies, which a call to an
// OpenAI-compatible API does not meet: it clones the request's headers for
// the redirects to come, and keeps the requests it sent. That bookkeeping
// costs about 1.5% of a call to a model that answers at once
// (BenchmarkUpstream in package pipeline). What needs it still goes
// through Client.Do:
//   - a client with a cookie jar or a Timeout, and a URL that carries user
//     information (Client.Do turns it into Basic authentication);
//   - a request whose body cannot be sent again;
//   - a redirect: the answer is handed to Client.Do as the answer to the
//     request's first hop, without sending the request again, and
//     Client.Do follows it as it would have (its CheckRedirect, the next
//     hop's method and body, the API key stripped on the way to another
//     host).
type directDoer struct {
	hc *http.Client
}

func (d directDoer) Do(req *http.Request) (*http.Response, error) {
	if d.hc.Jar != nil || d.hc.Timeout != 0 ||
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
		return nil, urlError(req, err)
	}
	if res.Body == nil {
		if res.ContentLength > 0 && req.Method != http.MethodHead {
			return nil, urlError(req, fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", rt, res.ContentLength))
		}
		res.Body = http.NoBody
	}
	if !isRedirect(res) {
		return res, nil
	}
	return d.follow(req, rt, res)
}

// follow hands res, the redirect answering req, to Client.Do as the answer
// to the first hop of a copy of req, so that Client.Do follows it as it
// would have followed it for req, without req being sent again.
func (d directDoer) follow(req *http.Request, rt http.RoundTripper, res *http.Response) (*http.Response, error) {
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			res.Body.Close()
			return nil, urlError(req, err)
		}
		again.Body = body
	}
	c := *d.hc
	c.Transport = &answered{res: res, next: rt}
	return c.Do(again)
}

// answered is the Transport of a Client.Do that follows a redirect
// already received: its first round trip answers with that redirect, the
// later ones go to next.
type answered struct {
	res  *http.Response // nil once given
	next http.RoundTripper
}

func (a *answered) RoundTrip(req *http.Request) (*http.Response, error) {
	if res := a.res; res != nil {
		a.res = nil
		if req.Body != nil {
			req.Body.Close()
		}
		return res, nil
	}
	return a.next.RoundTrip(req)
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

// urlError is err as Client.Do returns it for req, a request whose URL
// carries no user information.
func urlError(req *http.Request, err error) error {
	op := "Get"
	if req.Method != "" {
		op = req.Method[:1] + strings.ToLower(req.Method[1:])
	}
	return &url.Error{Op: op, URL: req.URL.String(), Err: err}
}
