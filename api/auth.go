package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// DefaultTenant is the tenant of a request without API keys configured
// and without a tenant_id.
const DefaultTenant = "default"

// HeaderTenant names the tenant of a /v1/chat/completions request when no
// API keys are configured (OpenAI requests have no tenant field).
const HeaderTenant = "X-Ragfuse-Tenant"

// LoopbackAdmin is the admin name logged for an admin action of a loopback
// client when no API keys are configured.
const LoopbackAdmin = "loopback"

const (
	tenantKey = "ragfuse.tenant"
	adminKey  = "ragfuse.admin" // the admin's name, on admin routes
)

// keyring checks bearer tokens. Keys are kept as SHA-256 digests and every
// digest is compared in constant time, so neither a key's content nor its
// length leaks through timing. A key belongs to a tenant or, as an admin
// key, to a named admin. A keyring is immutable and safe for concurrent
// use.
type keyring struct {
	digests [][sha256.Size]byte
	owners  []keyOwner
}

// keyOwner is whom a key belongs to: a tenant, or an admin by name.
type keyOwner struct{ tenant, admin string }

func newKeyring(tenants, admins map[string]string) *keyring {
	kr := &keyring{}
	for k, t := range tenants {
		kr.digests = append(kr.digests, sha256.Sum256([]byte(k)))
		kr.owners = append(kr.owners, keyOwner{tenant: t})
	}
	for k, name := range admins {
		kr.digests = append(kr.digests, sha256.Sum256([]byte(k)))
		kr.owners = append(kr.owners, keyOwner{admin: name})
	}
	return kr
}

func (kr *keyring) enabled() bool { return len(kr.digests) > 0 }

// owner returns the owner of key, checking every key.
func (kr *keyring) owner(key string) (keyOwner, bool) {
	d := sha256.Sum256([]byte(key))
	found := -1
	for i := range kr.digests {
		if subtle.ConstantTimeCompare(d[:], kr.digests[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return keyOwner{}, false
	}
	return kr.owners[found], true
}

// bearer returns the owner of the request's bearer key, or a 401.
func (s *Server) bearer(c echo.Context) (keyOwner, error) {
	h := c.Request().Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragfuse"`)
		return keyOwner{}, refusal(c, http.StatusUnauthorized, CodeUnauthorized, "an Authorization: Bearer <key> header is required")
	}
	o, ok := s.keys.owner(strings.TrimSpace(token))
	if !ok {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragfuse", error="invalid_token"`)
		return keyOwner{}, refusal(c, http.StatusUnauthorized, CodeUnauthorized, "unknown API key")
	}
	return o, nil
}

// refusal is an error refusing the request before its body is read: the
// connection is then closed rather than drained, so a client cannot hold
// it by sending the body slowly.
func refusal(c echo.Context, status int, code, msg string) *Error {
	e := newError(status, code, msg)
	e.Close = c.Request().ContentLength != 0
	return e
}

// authenticate guards the question routes: when keys are configured it
// requires a tenant's key and records the tenant for the handler (an
// admin key is 403 forbidden: it does not ask questions). Without keys
// it lets every request through.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.keys.enabled() {
			return next(c)
		}
		o, err := s.bearer(c)
		if err != nil {
			return err
		}
		if o.tenant == "" {
			return refusal(c, http.StatusForbidden, CodeForbidden, "an admin key does not ask questions; use a tenant's key")
		}
		c.Set(tenantKey, o.tenant)
		return next(c)
	}
}

// adminOnly guards the admin routes: when any key is configured it
// requires an admin key (a tenant's key is 403 forbidden); with no keys at
// all it lets only loopback clients through (see loopback). It records
// the admin's name for the handler's log line.
func (s *Server) adminOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		name, err := s.admin(c)
		if err != nil {
			return err
		}
		if name == "" {
			return refusal(c, http.StatusForbidden, CodeForbidden, s.adminOnlyMessage())
		}
		c.Set(adminKey, name)
		return next(c)
	}
}

// admin returns the name of the request's admin ("" for none): the name
// of its admin key, or LoopbackAdmin for a loopback client when no keys
// are configured. With keys, a request without a known key is a 401; a
// tenant's key sets the tenant for the handler.
func (s *Server) admin(c echo.Context) (string, error) {
	if !s.keys.enabled() {
		if loopback(c.Request()) {
			return LoopbackAdmin, nil
		}
		return "", nil
	}
	o, err := s.bearer(c)
	if err != nil {
		return "", err
	}
	if o.tenant != "" {
		c.Set(tenantKey, o.tenant)
	}
	return o.admin, nil
}

func (s *Server) adminOnlyMessage() string {
	if s.keys.enabled() {
		return "this route needs an admin key (auth.admin_keys)"
	}
	return "without API keys, admin routes answer loopback clients only"
}

// adminName returns the admin recorded by adminOnly.
func adminName(c echo.Context) string {
	name, _ := c.Get(adminKey).(string)
	return name
}

// loopback reports whether r comes from a loopback address and was not
// forwarded: a proxy on the same host (X-Forwarded-For, Forwarded) makes
// every client look local, so a forwarded request is not a loopback
// client's.
func loopback(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// resolveTenant decides the tenant of a request. With keys, the key's
// tenant wins and a different requested tenant is 403 tenant_mismatch;
// without keys, the requested tenant is used, or DefaultTenant.
func resolveTenant(c echo.Context, requested string) (string, error) {
	if keyTenant, ok := c.Get(tenantKey).(string); ok {
		if requested != "" && requested != keyTenant {
			return "", newError(http.StatusForbidden, CodeTenantMismatch, "tenant_id does not match the API key's tenant")
		}
		return keyTenant, nil
	}
	if requested == "" {
		return DefaultTenant, nil
	}
	if !validTenant(requested) {
		return "", newError(http.StatusBadRequest, CodeInvalidTenant, "tenant must be 1-64 characters of A-Z a-z 0-9 _ . -")
	}
	return requested, nil
}
