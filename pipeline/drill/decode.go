package drill

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeStrict decodes n into the value v points to, field by field,
// rejecting unknown fields and duplicate keys. Errors name the field's
// path below prefix, e.g. "faults.p1[2].at: …".
func decodeStrict(n *yaml.Node, v any, prefix string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("drill: decode into %T", v)
	}
	return decodeValue(n, rv.Elem(), prefix)
}

func decodeValue(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		return pathErr(path, n, "aliases are not supported")
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeValue(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return pathErr(path, n, "want a mapping")
		}
		return decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return pathErr(path, n, "want a list")
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := decodeValue(c, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return pathErr(path, n, "want a mapping")
		}
		if v.Type().Key().Kind() != reflect.String {
			return pathErr(path, n, "unsupported map key type")
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if m.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())).IsValid() {
				return pathErr(join(path, k), n.Content[i], "duplicate key")
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := decodeValue(n.Content[i+1], e, join(path, k)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return pathErr(path, n, "want a single value")
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		return pathErr(path, n, "invalid value "+strconv.Quote(n.Value)+" for "+v.Type().String())
	}
	return nil
}

func decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	fields := map[string]int{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = i
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		idx, ok := fields[k]
		if !ok {
			return pathErr(join(path, k), n.Content[i], "unknown field")
		}
		if seen[k] {
			return pathErr(join(path, k), n.Content[i], "duplicate key")
		}
		seen[k] = true
		if err := decodeValue(n.Content[i+1], v.Field(idx), join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// pathErr returns an error naming the field path and the line of n.
func pathErr(path string, n *yaml.Node, msg string) error {
	if path == "" {
		path = "(root)"
	}
	return fmt.Errorf("%s: %s (line %d)", path, msg, n.Line)
}
