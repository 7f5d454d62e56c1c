package drill

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/ragfuse/ragfuse/config"
)

// parseConfigNode decodes an inline configuration.
func parseConfigNode(n *yaml.Node) (config.Config, error) {
	var c config.Config
	if err := config.DecodeYAML(n, &c, "config"); err != nil {
		return c, err
	}
	return c, nil
}

// loadConfigFile reads a configuration file.
func loadConfigFile(path string) (config.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return config.Config{}, fmt.Errorf("config_file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return config.Config{}, fmt.Errorf("config_file %s: %v", filepath.Base(path), err)
	}
	var c config.Config
	if err := config.DecodeYAML(&doc, &c, ""); err != nil {
		return c, fmt.Errorf("config_file %s: %v", filepath.Base(path), err)
	}
	return c, nil
}
