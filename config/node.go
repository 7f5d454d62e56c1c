package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	durationType = reflect.TypeOf(time.Duration(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// checkNode checks that n can be decoded into a value of type t, reporting
// unknown fields, fields of another tier kind and unreadable values with
// their paths.
func checkNode(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	n = deref(n)
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
		kind := ""
		if k := mappingValue(n, "kind"); k != nil && k.Kind == yaml.ScalarNode {
			kind = k.Value
		}
		checkMapping(n, yamlFields(t), kind, path, errs)
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

// checkMapping checks the keys of mapping n against fs, the fields of a
// struct, for a mapping whose kind: is kind ("" when it has none).
func checkMapping(n *yaml.Node, fs fieldSet, kind, path string, errs *[]error) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Tag == "!!merge" { // <<: *anchor, or a list of them
			for _, m := range merged(val) {
				if m.Kind != yaml.MappingNode {
					checkNode(m, fs.typ, path, errs) // reports what it is instead
					continue
				}
				checkMapping(m, fs, kind, path, errs)
			}
			continue
		}
		f, ok := fs.byName[key.Value]
		switch {
		case !ok:
			*errs = append(*errs, &FieldError{Path: join(path, key.Value), Msg: "unknown field"})
		case !fs.admits(f, kind):
			*errs = append(*errs, &FieldError{Path: join(path, key.Value), Msg: notOfKind(kind)})
		default:
			checkNode(val, f.typ, join(path, key.Value), errs)
		}
	}
}

// mappingValue returns the value of key in mapping n, or nil: the
// mapping's own keys first, then those of its merge keys in order, as
// YAML merges them.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i]; {
		case k.Tag == "!!merge":
			merges = append(merges, merged(n.Content[i+1])...)
		case k.Value == key:
			return deref(n.Content[i+1])
		}
	}
	for _, m := range merges {
		if m.Kind == yaml.MappingNode {
			if v := mappingValue(m, key); v != nil {
				return v
			}
		}
	}
	return nil
}

// merged returns the mappings a merge key's value names: one, or a list.
func merged(val *yaml.Node) []*yaml.Node {
	val = deref(val)
	if val.Kind != yaml.SequenceNode {
		return []*yaml.Node{val}
	}
	out := make([]*yaml.Node, len(val.Content))
	for i, m := range val.Content {
		out[i] = deref(m)
	}
	return out
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// yamlField is one field a YAML mapping may hold, inline structs
// flattened.
type yamlField struct {
	name  string
	typ   reflect.Type
	index []int    // for reflect.Value.FieldByIndex
	kinds []string // the kinds it is valid on; nil: every kind
}

// fieldSet is the fields of a struct type by YAML name.
type fieldSet struct {
	typ    reflect.Type
	list   []yamlField // in declaration order
	byName map[string]yamlField
	kinds  []string // every kind some field names
}

// yamlFields returns the fields of struct type t. A field's `kind` tag
// (a comma-separated list) limits it, or the fields of an inline struct,
// to those kinds; a tag inside an inline struct narrows its own.
func yamlFields(t reflect.Type) fieldSet {
	fs := fieldSet{typ: t, byName: map[string]yamlField{}}
	fs.add(t, nil, nil)
	return fs
}

func (fs *fieldSet) add(t reflect.Type, index []int, kinds []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(index), i)
		k := kinds
		if tag, ok := f.Tag.Lookup("kind"); ok {
			k = strings.Split(tag, ",")
			fs.kinds = append(fs.kinds, k...)
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			fs.add(f.Type, idx, k)
		case name != "" && name != "-":
			yf := yamlField{name: name, typ: f.Type, index: idx, kinds: k}
			fs.list = append(fs.list, yf)
			fs.byName[name] = yf
		}
	}
}

// admits reports whether f may be set on a mapping of kind. Where the
// kind is missing or unknown, every field is admitted: Validate reports
// the kind itself.
func (fs fieldSet) admits(f yamlField, kind string) bool {
	return f.kinds == nil || !slices.Contains(fs.kinds, kind) || slices.Contains(f.kinds, kind)
}

// foreign returns the fields set (not zero) in v, a value of fs's type,
// that kind does not admit.
func (fs fieldSet) foreign(v reflect.Value, kind string) []string {
	var out []string
	for _, f := range fs.list {
		if !fs.admits(f, kind) && !v.FieldByIndex(f.index).IsZero() {
			out = append(out, f.name)
		}
	}
	return out
}

// notOfKind is the message for a field set on a tier of another kind.
func notOfKind(kind string) string {
	article := "a"
	if kind == KindLLM || kind != "" && strings.ContainsAny(kind[:1], "aeiou") {
		article = "an"
	}
	return fmt.Sprintf("not a field of %s %s tier", article, kind)
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
