package api

import "testing"

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
