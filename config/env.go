package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// CheckEnv reports models whose api_key_env names a variable that getenv
// (nil: os.Getenv) finds empty. The values are never part of an error.
func (c *Config) CheckEnv(getenv func(string) string) error {
	getenv = orGetenv(getenv)
	var v validator
	for _, id := range sortedKeys(c.Models) {
		// A value that is no variable name (Validate refuses it) may be
		// the key itself: it must not reach an error or a log.
		if name := c.Models[id].APIKeyEnv; name != "" && EnvName(name) {
			v.check(getenv(name) != "", "models."+id+".api_key_env",
				fmt.Sprintf("environment variable %s is not set", name))
		}
	}
	return v.err()
}

// ResolveKeys reads the API keys of a from the environment through getenv
// (nil: os.Getenv) and returns them as a map from key to tenant, the form
// the HTTP server takes. A key variable that is unset or empty, an invalid
// tenant, or one key given to two tenants is a *FieldError naming the
// field, e.g. "auth.keys[1].key_env". The keys themselves never appear in
// errors.
func ResolveKeys(a Auth, getenv func(string) string) (map[string]string, error) {
	getenv = orGetenv(getenv)
	keys := make(map[string]string, len(a.Keys))
	for i, k := range a.Keys {
		path := fmt.Sprintf("auth.keys[%d]", i)
		fail := func(field, msg string) (map[string]string, error) {
			return nil, &FieldError{Path: path + "." + field, Msg: msg}
		}
		if k.KeyEnv == "" {
			return fail("key_env", "required")
		}
		if !EnvName(k.KeyEnv) {
			return fail("key_env", NotEnvName)
		}
		if !tenantName.MatchString(k.Tenant) {
			return fail("tenant", fmt.Sprintf("%q must be 1-64 characters of A-Z a-z 0-9 _ . -", k.Tenant))
		}
		v := strings.TrimSpace(getenv(k.KeyEnv))
		if v == "" {
			return fail("key_env", fmt.Sprintf("environment variable %s is empty or unset", k.KeyEnv))
		}
		if t, dup := keys[v]; dup && t != k.Tenant {
			return fail("key_env", k.KeyEnv+" holds the same key as another tenant's")
		}
		keys[v] = k.Tenant
	}
	return keys, nil
}

// tenantName is the form of a tenant id, as the HTTP server accepts it.
var tenantName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// NotEnvName is the message for a key_env or api_key_env that is not a
// variable name (see EnvName). It does not repeat the value, which may be
// a key pasted in by mistake.
const NotEnvName = "must be the name of an environment variable (letters, digits, _), not the key itself"

// EnvName reports whether s looks like an environment variable name:
// letters, digits and underscores, not starting with a digit.
func EnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

func orGetenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
