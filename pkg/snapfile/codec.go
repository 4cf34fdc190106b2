package snapfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// The codec writes a snapshot by reflection over package observed's types,
// so that a field added there is saved and loaded with no edit here:
//   - a struct of package observed is a JSON object, one key per field (its
//     json tag's name, else its snapfile tag's, else its Go name);
//   - a *observed.Target is its index in the file's table of targets, so
//     targets nested and shared stay one target each;
//   - a map whose keys are not strings is a list of {key, value} entries;
//   - anything else (Kubernetes objects, times, group-resources) is written
//     by encoding/json, Kubernetes objects through their allow-list (allow.go);
//   - nil (not read) is null or absent, empty (read, none found) is {} or [].
//   - observed.Slots is an object of the declared slots, each value written
//     and read as its declared type (observed.SlotType); a slot this release
//     does not declare is ignored on reading.

var (
	objectType   = reflect.TypeFor[metav1.Object]()
	targetPtr    = reflect.TypeFor[*observed.Target]()
	unstructPtr  = reflect.TypeFor[*unstructured.Unstructured]()
	slotsType    = reflect.TypeFor[observed.Slots]()
	snapshotPath = reflect.TypeFor[observed.Snapshot]().PkgPath()
)

// encoder writes values of package observed's types.
type encoder struct {
	index map[*observed.Target]int
	keys  keptKeys
}

func (e *encoder) encode(v reflect.Value) (any, error) {
	switch {
	case v.Type() == targetPtr:
		if v.IsNil() {
			return nil, nil
		}
		i, ok := e.index[v.Interface().(*observed.Target)]
		if !ok {
			return nil, fmt.Errorf("a nested target is not in the table")
		}
		return i, nil
	case v.Type() == unstructPtr:
		if v.IsNil() {
			return nil, nil
		}
		return json.RawMessage(mustJSON(allowObject(v.Interface().(*unstructured.Unstructured), e.keys).Object)), nil
	}
	switch v.Kind() {
	case reflect.Interface: // a slot's value
		if v.IsNil() {
			return nil, nil
		}
		return e.encode(v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		if _, ok := allowed[v.Type().Elem()]; ok {
			return allowedLeaf(v, e.keys)
		}
		return e.encode(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			x, err := e.encode(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case reflect.Map:
		return e.encodeMap(v)
	case reflect.Struct:
		if _, ok := allowed[v.Type()]; ok {
			return allowedLeaf(addr(v), e.keys)
		}
		if v.Type().PkgPath() != snapshotPath {
			if addr(v).Type().Implements(objectType) {
				return nil, fmt.Errorf("%s has no allow-list (allow.go): a snapshot writes only what the rules read", v.Type())
			}
			return leaf(v)
		}
		out := map[string]any{}
		for i := range v.NumField() {
			name, ok := fieldName(v.Type().Field(i))
			if !ok {
				continue
			}
			x, err := e.encode(v.Field(i))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = x
		}
		return out, nil
	}
	return leaf(v)
}

func (e *encoder) encodeMap(v reflect.Value) (any, error) {
	if v.IsNil() {
		return nil, nil
	}
	keys := v.MapKeys()
	if v.Type().Key().Kind() == reflect.String {
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			x, err := e.encode(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			out[k.String()] = x
		}
		return out, nil
	}
	// Entries in a stable order: the same snapshot makes the same file.
	slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface())) })
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		x, err := e.encode(v.MapIndex(k))
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"key": k.Interface(), "value": x})
	}
	return out, nil
}

// allowedLeaf writes a Kubernetes object (by pointer) as its allow-list keeps it.
func allowedLeaf(ptr reflect.Value, keys keptKeys) (any, error) {
	kept := allowAny(ptr.Interface(), ptr.Type().Elem(), keys)
	if kept == nil {
		return nil, fmt.Errorf("%s cannot be written", ptr.Type().Elem())
	}
	return leaf(reflect.ValueOf(kept))
}

// addr is a pointer to v, to a copy when v cannot be addressed (a map's value).
func addr(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v.Addr()
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p
}

func leaf(v reflect.Value) (any, error) {
	b, err := json.Marshal(v.Interface())
	return json.RawMessage(b), err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null") // maps of JSON values always marshal
	}
	return b
}

// fieldName is a field's key in the file; false for unexported fields.
func fieldName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	for _, tag := range []string{f.Tag.Get("snapfile"), f.Tag.Get("json")} {
		if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
			return name, true
		}
	}
	return f.Name, true
}

// decoder reads what encoder wrote.
type decoder struct {
	targets []*observed.Target
}

func (d *decoder) decode(data json.RawMessage, v reflect.Value) error {
	null := len(data) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null"))
	switch {
	case v.Type() == targetPtr:
		if null {
			return nil
		}
		var i int
		if err := json.Unmarshal(data, &i); err != nil {
			return err
		}
		if i < 0 || i >= len(d.targets) {
			return fmt.Errorf("target %d of %d", i, len(d.targets))
		}
		v.Set(reflect.ValueOf(d.targets[i]))
		return nil
	case v.Type() == unstructPtr:
		if null {
			return nil
		}
		u, err := decodeObject(data)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(u))
		return nil
	case v.Type() == slotsType && !null:
		return d.decodeSlots(data, v)
	}
	if null {
		return nil // the zero value: nil where nil means "not read"
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().PkgPath() != snapshotPath {
			return json.Unmarshal(data, v.Addr().Interface())
		}
		p := reflect.New(v.Type().Elem())
		if err := d.decode(data, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Slice:
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return err
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, item := range items {
			if err := d.decode(item, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		return d.decodeMap(data, v)
	case reflect.Struct:
		if v.Type().PkgPath() != snapshotPath {
			return json.Unmarshal(data, v.Addr().Interface())
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return err
		}
		for i := range v.NumField() {
			name, ok := fieldName(v.Type().Field(i))
			if !ok {
				continue
			}
			if err := d.decode(fields[name], v.Field(i)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
	return json.Unmarshal(data, v.Addr().Interface())
}

func (d *decoder) decodeMap(data json.RawMessage, v reflect.Value) error {
	m := reflect.MakeMap(v.Type())
	kt, vt := v.Type().Key(), v.Type().Elem()
	if kt.Kind() == reflect.String {
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(data, &entries); err != nil {
			return err
		}
		for k, raw := range entries {
			val := reflect.New(vt).Elem()
			if err := d.decode(raw, val); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(kt), val)
		}
		v.Set(m)
		return nil
	}
	var entries []struct{ Key, Value json.RawMessage }
	if err := json.Unmarshal(data, &entries); err != nil {
		return err
	}
	for _, e := range entries {
		key, val := reflect.New(kt), reflect.New(vt).Elem()
		if err := json.Unmarshal(e.Key, key.Interface()); err != nil {
			return err
		}
		if err := d.decode(e.Value, val); err != nil {
			return err
		}
		m.SetMapIndex(key.Elem(), val)
	}
	v.Set(m)
	return nil
}

// decodeSlots reads each slot this release declares as its declared type.
func (d *decoder) decodeSlots(data json.RawMessage, v reflect.Value) error {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return err
	}
	slots := observed.Slots{}
	for name, raw := range entries {
		t, ok := observed.SlotType(name)
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue // another release's slot, or one not read
		}
		val := reflect.New(t).Elem()
		if err := d.decode(raw, val); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		slots[name] = val.Interface()
	}
	v.Set(reflect.ValueOf(slots))
	return nil
}

func decodeObject(data json.RawMessage) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}
