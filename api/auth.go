package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// DefaultTenant is the tenant of a request without API keys configured
// and without a tenant_id.
const DefaultTenant = "default"

// HeaderTenant names the tenant of a /v1/chat/completions request when no
// API keys are configured (OpenAI requests have no tenant field).
const HeaderTenant = "X-Ragfuse-Tenant"

const tenantKey = "ragfuse.tenant"

// keyring checks bearer tokens. Keys are kept as SHA-256 digests and every
// digest is compared in constant time, so neither a key's content nor its
// length leaks through timing. A keyring is immutable and safe for
// concurrent use.
type keyring struct {
	digests [][sha256.Size]byte
	tenants []string
}

func newKeyring(keys map[string]string) *keyring {
	kr := &keyring{}
	for k, t := range keys {
		kr.digests = append(kr.digests, sha256.Sum256([]byte(k)))
		kr.tenants = append(kr.tenants, t)
	}
	return kr
}

func (kr *keyring) enabled() bool { return len(kr.digests) > 0 }

// tenant returns the tenant of key, checking every key.
func (kr *keyring) tenant(key string) (string, bool) {
	d := sha256.Sum256([]byte(key))
	found := -1
	for i := range kr.digests {
		if subtle.ConstantTimeCompare(d[:], kr.digests[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return kr.tenants[found], true
}

// authenticate requires a known bearer key when keys are configured and
// records the key's tenant for the handler. Without keys it lets every
// request through.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.keys.enabled() {
			return next(c)
		}
		h := c.Request().Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragfuse"`)
			return newError(http.StatusUnauthorized, CodeUnauthorized, "an Authorization: Bearer <key> header is required")
		}
		tenant, ok := s.keys.tenant(strings.TrimSpace(token))
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragfuse", error="invalid_token"`)
			return newError(http.StatusUnauthorized, CodeUnauthorized, "unknown API key")
		}
		c.Set(tenantKey, tenant)
		return next(c)
	}
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
