package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeConfigReference keeps the configuration reference in README.md
// true: its YAML must parse (no unknown field) and validate.
func TestReadmeConfigReference(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Configuration reference")
	if !ok {
		t.Fatal("README.md has no configuration reference")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the configuration reference has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	path := filepath.Join(t.TempDir(), "readme.yaml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("README configuration reference: %v", err)
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("README configuration reference: %v", err)
	}
	if len(cfg.Tiers) != 6 || len(cfg.Models) != 2 {
		t.Errorf("parsed %d tiers and %d models, want 6 and 2", len(cfg.Tiers), len(cfg.Models))
	}
}
