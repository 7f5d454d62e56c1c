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
	if name := c.Redis.URLEnv; name != "" && EnvName(name) {
		v.check(getenv(name) != "", "redis.url_env", fmt.Sprintf("environment variable %s is not set", name))
	}
	return v.err()
}

// redisURL returns the Redis URL of r: redis.url, or the value of the
// variable redis.url_env names; "" for none.
func redisURL(r Redis, getenv func(string) string) string {
	if r.URLEnv != "" {
		return strings.TrimSpace(orGetenv(getenv)(r.URLEnv))
	}
	return r.URL
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
		if !tenantName.MatchString(k.Tenant) {
			return nil, &FieldError{Path: path + ".tenant", Msg: fmt.Sprintf("%q must be 1-64 characters of A-Z a-z 0-9 _ . -", k.Tenant)}
		}
		v, err := readKey(getenv, path, k.KeyEnv)
		if err != nil {
			return nil, err
		}
		if t, dup := keys[v]; dup && t != k.Tenant {
			return nil, &FieldError{Path: path + ".key_env", Msg: k.KeyEnv + " holds the same key as another tenant's"}
		}
		keys[v] = k.Tenant
	}
	return keys, nil
}

// ResolveAdminKeys reads auth.admin_keys from the environment through
// getenv (nil: os.Getenv) and returns them as a map from key to the key's
// name, the form the HTTP server takes. A key variable that is unset or
// empty, an invalid name, or a key that is also a tenant's (auth.keys) or
// another admin key's is a *FieldError naming the field, e.g.
// "auth.admin_keys[0].key_env". The keys never appear in errors.
func ResolveAdminKeys(a Auth, getenv func(string) string) (map[string]string, error) {
	getenv = orGetenv(getenv)
	tenantKeys := map[string]bool{}
	for _, k := range a.Keys {
		if EnvName(k.KeyEnv) {
			tenantKeys[strings.TrimSpace(getenv(k.KeyEnv))] = true
		}
	}
	keys := make(map[string]string, len(a.AdminKeys))
	for i, k := range a.AdminKeys {
		path := fmt.Sprintf("auth.admin_keys[%d]", i)
		if !tenantName.MatchString(k.Name) {
			return nil, &FieldError{Path: path + ".name", Msg: fmt.Sprintf("%q must be 1-64 characters of A-Z a-z 0-9 _ . -", k.Name)}
		}
		v, err := readKey(getenv, path, k.KeyEnv)
		if err != nil {
			return nil, err
		}
		if tenantKeys[v] {
			return nil, &FieldError{Path: path + ".key_env", Msg: k.KeyEnv + " holds a tenant's key: an admin key must be its own"}
		}
		if _, dup := keys[v]; dup {
			return nil, &FieldError{Path: path + ".key_env", Msg: k.KeyEnv + " holds the same key as another admin key"}
		}
		keys[v] = k.Name
	}
	return keys, nil
}

// readKey returns the key held in the variable keyEnv of the entry at
// path, without surrounding white space.
func readKey(getenv func(string) string, path, keyEnv string) (string, error) {
	switch {
	case keyEnv == "":
		return "", &FieldError{Path: path + ".key_env", Msg: "required"}
	case !EnvName(keyEnv):
		return "", &FieldError{Path: path + ".key_env", Msg: NotEnvName}
	}
	v := strings.TrimSpace(getenv(keyEnv))
	if v == "" {
		return "", &FieldError{Path: path + ".key_env", Msg: fmt.Sprintf("environment variable %s is empty or unset", keyEnv)}
	}
	return v, nil
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
