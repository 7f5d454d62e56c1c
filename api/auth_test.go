package api

import (
	"strings"
	"testing"

	"github.com/ragfuse/ragfuse/pipeline"
)

func TestResolveKeys(t *testing.T) {
	env := map[string]string{"K_ACME": "sk-acme-secret", "K_BETA": " sk-beta ", "K_DUP": "sk-acme-secret"}
	getenv := func(k string) string { return env[k] }

	keys, err := ResolveKeys(pipeline.AuthConfig{Keys: []pipeline.AuthKey{
		{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_BETA", Tenant: "beta"},
	}}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if keys["sk-acme-secret"] != "acme" || keys["sk-beta"] != "beta" || len(keys) != 2 {
		t.Fatalf("keys = %v", keys)
	}

	for name, tc := range map[string]struct {
		keys []pipeline.AuthKey
		want string
	}{
		"unset":      {[]pipeline.AuthKey{{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_NONE", Tenant: "x"}}, "auth.keys[1].key_env"},
		"no env":     {[]pipeline.AuthKey{{Tenant: "acme"}}, "auth.keys[0].key_env"},
		"bad tenant": {[]pipeline.AuthKey{{KeyEnv: "K_ACME", Tenant: "a/b"}}, "auth.keys[0].tenant"},
		"duplicate":  {[]pipeline.AuthKey{{KeyEnv: "K_ACME", Tenant: "acme"}, {KeyEnv: "K_DUP", Tenant: "beta"}}, "auth.keys[1].key_env"},
		// A key pasted where its variable's name belongs is refused
		// without being repeated.
		"pasted key": {[]pipeline.AuthKey{{KeyEnv: "sk-pasted-secret", Tenant: "acme"}}, "auth.keys[0].key_env"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ResolveKeys(pipeline.AuthConfig{Keys: tc.keys}, getenv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-") {
				t.Fatalf("error leaks a key: %v", err)
			}
		})
	}
}

func TestKeyring(t *testing.T) {
	kr := newKeyring(map[string]string{"sk-a": "a", "sk-b": "b"})
	for key, want := range map[string]string{"sk-a": "a", "sk-b": "b", "sk-c": "", "": "", "sk-a ": ""} {
		got, ok := kr.tenant(key)
		if got != want || ok != (want != "") {
			t.Errorf("tenant(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if newKeyring(nil).enabled() {
		t.Error("an empty keyring is enabled")
	}
}
