package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"

	"gopkg.in/yaml.v3"
)

// FieldError is a configuration error at one field, named by its path
// (e.g. "tiers[2].timeout").
type FieldError struct {
	Path string
	Msg  string
}

// Error returns "path: message".
func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Load reads the YAML configuration at path; see Parse.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(b)
}

// Parse reads a YAML configuration, fills the defaults and validates it.
// Unknown fields, fields of another tier kind and bad values fail with the
// field's path; all the errors found are joined. Environment variables are
// not looked at here (see Config.CheckEnv and ResolveKeys).
func Parse(b []byte) (Config, error) {
	var cfg Config
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if len(root.Content) > 0 {
		var errs []error
		checkNode(root.Content[0], reflect.TypeOf(cfg), "", &errs)
		if len(errs) > 0 {
			return cfg, errors.Join(errs...)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// DecodeYAML decodes n into the value v points to with the checks of
// Parse: unknown fields, fields of another tier kind and unreadable values
// fail with their paths below path (every one found, joined, as
// *FieldError); a yaml.Node field takes any YAML. Nothing is filled in or
// validated. A document that embeds a configuration (a drill scenario)
// decodes its own fields and the configuration's with it.
func DecodeYAML(n *yaml.Node, v any, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	var errs []error
	checkNode(n, reflect.TypeOf(v), path, &errs)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return n.Decode(v)
}
