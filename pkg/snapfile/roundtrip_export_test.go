package snapfile

import (
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// AllowListed returns v, a value held by the snapshot s outside package
// snapshot's own structs, as a file of s keeps it: each object of a kind
// with an allow-list through it (allow.go), a target's object through
// allowObject, the rest unchanged. For roundtrip_test.go, which expects
// exactly this back from a trip through a file.
func AllowListed(v reflect.Value, s *observed.Snapshot) reflect.Value {
	return allowListed(v, keysOf(s))
}

func allowListed(v reflect.Value, keys keptKeys) reflect.Value {
	t := v.Type()
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		if v.IsNil() {
			return v
		}
		return reflect.ValueOf(allowObject(v.Interface().(*unstructured.Unstructured), keys))
	}
	if f, ok := allowed[t]; ok {
		in := reflect.New(t)
		in.Elem().Set(v)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in.Interface())
		if err != nil {
			panic(err)
		}
		kept := f.keep(m).(map[string]any)
		keys.filter(kept)
		out := reflect.New(t)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(kept, out.Interface()); err != nil {
			panic(err)
		}
		return out.Elem()
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(allowListed(v.Elem(), keys))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(allowListed(v.Index(i), keys))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(t, v.Len())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, allowListed(v.MapIndex(k), keys))
		}
		return m
	}
	return v
}
