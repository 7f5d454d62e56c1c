package drill

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/ragfuse/ragfuse/pipeline"
)

// parseConfigNode decodes an inline pipeline configuration.
func parseConfigNode(n *yaml.Node) (pipeline.Config, error) {
	var c pipeline.Config
	if err := pipeline.DecodeYAML(n, &c, "config"); err != nil {
		return c, err
	}
	return c, nil
}

// loadConfigFile reads a pipeline configuration file.
func loadConfigFile(path string) (pipeline.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return pipeline.Config{}, fmt.Errorf("config_file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return pipeline.Config{}, fmt.Errorf("config_file %s: %v", filepath.Base(path), err)
	}
	var c pipeline.Config
	if err := pipeline.DecodeYAML(&doc, &c, ""); err != nil {
		return c, fmt.Errorf("config_file %s: %v", filepath.Base(path), err)
	}
	return c, nil
}
