package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

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

// LoadConfig reads the YAML configuration at path; see ParseConfig.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: config: %w", err)
	}
	return ParseConfig(b)
}

// ParseConfig reads a YAML configuration, fills the defaults and validates
// it. Unknown fields and bad values fail with the field's path; all the
// errors found are joined. Environment variables are not looked at here
// (see Config.CheckEnv).
func ParseConfig(b []byte) (Config, error) {
	var cfg Config
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return cfg, fmt.Errorf("pipeline: config: %w", err)
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
			return cfg, fmt.Errorf("pipeline: config: %w", err)
		}
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// DecodeYAML decodes n into the value v points to with the checks of
// ParseConfig: unknown fields and unreadable values fail with their paths
// below path (every one found, joined, as *FieldError); a yaml.Node field
// takes any YAML. Nothing is filled in or validated. A document that
// embeds a configuration (a drill scenario) decodes its own fields and the
// configuration's with it.
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

// checkNode checks that n can be decoded into a value of type t, reporting
// unknown fields and unreadable values with their paths.
func checkNode(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	fail := func(msg string) { *errs = append(*errs, &FieldError{Path: orRoot(path), Msg: msg}) }
	switch {
	case t == nodeType:
	case t == durationType:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!int" || n.Tag == "!!float" {
			fail(fmt.Sprintf("want a duration with a unit, like 5s or 300ms, not %s", show(n)))
			return
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			fail(fmt.Sprintf("want a duration like 5s or 300ms, not %s", show(n)))
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			fail("want a mapping of fields, not " + show(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			if n.Content[i].Tag == "!!merge" { // <<: *anchor, or a list of them
				for val.Kind == yaml.AliasNode && val.Alias != nil {
					val = val.Alias
				}
				merged := []*yaml.Node{val}
				if val.Kind == yaml.SequenceNode {
					merged = val.Content
				}
				for _, m := range merged {
					checkNode(m, t, path, errs)
				}
				continue
			}
			f, ok := fieldByTag(t, key)
			if !ok {
				*errs = append(*errs, &FieldError{Path: join(path, key), Msg: "unknown field"})
				continue
			}
			checkNode(val, f.Type, join(path, key), errs)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			fail("want a mapping, not " + show(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkNode(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			fail("want a list, not " + show(n))
			return
		}
		for i, c := range n.Content {
			checkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			fail(fmt.Sprintf("want a %s, not a %s", kindName(t), nodeKind(n)))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			fail(fmt.Sprintf("want a %s, not %s", kindName(t), show(n)))
		}
	}
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole number"
	}
	return t.String()
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// show quotes a scalar's value for an error message, cut short.
func show(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return "a " + nodeKind(n)
	}
	v := hideUserinfo(n.Value)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// hideUserinfo replaces the user information of a URL in v
// (redis://:password@host, https://user:pass@host) with "***": a value
// quoted in an error (a URL written where a mapping belongs) must not
// show a password.
func hideUserinfo(v string) string {
	i := strings.Index(v, "://")
	if i < 0 {
		return v
	}
	rest := v[i+3:]
	host := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		host = rest[:j]
	}
	at := strings.LastIndex(host, "@")
	if at < 0 && strings.Contains(host, ":") {
		at = strings.LastIndex(rest, "@") // a raw '/', '?' or '#' in the password
	}
	if at < 0 {
		return v
	}
	return v[:i+3] + "***" + rest[at:]
}
