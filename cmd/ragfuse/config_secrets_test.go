package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigErrorsHideURLCredentials: a configuration error may quote the
// value it could not read (a URL written where a mapping belongs, the
// common `redis: redis://...` slip); a password in that URL must not
// reach the error printed on stderr, whole or cut short.
func TestConfigErrorsHideURLCredentials(t *testing.T) {
	const (
		redisPass = "hunter2redispw"
		modelPass = "s3cretmodelpw"
		longPass  = "0123456789abcdefghij0123456789abcdefghij"
	)
	tests := []struct {
		name, body, field string
		secrets           []string
	}{
		{"redis", `redis: "redis://:` + redisPass + `@10.0.0.5:6379/0"` + "\ntiers:\n  - {kind: static}\n",
			"redis", []string{redisPass}},
		{"model", "models:\n  m1: \"https://bob:" + modelPass + "@api.example/v1\"\ntiers:\n  - {kind: static}\n",
			"models.m1", []string{modelPass}},
		{"long password cut short", `redis: "rediss://:` + longPass + `@10.0.0.5:6379/0"` + "\ntiers:\n  - {kind: static}\n",
			"redis", []string{longPass[:8]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(context.Background(), nil, "serve", "--config", path)
			if code != exitError || !strings.Contains(stderr, tc.field+":") {
				t.Fatalf("exit %d, stderr %q; want exit 1 naming %s", code, stderr, tc.field)
			}
			for _, s := range tc.secrets {
				if strings.Contains(stderr+stdout, s) {
					t.Errorf("the password %q is in the output: %q", s, stderr)
				}
			}
		})
	}
}
