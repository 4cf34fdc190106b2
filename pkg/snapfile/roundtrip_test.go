package snapfile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
)

// The round trip below cannot go blind: it fills every field of every struct
// a snapshot is made of by reflection, so a field added to any of them is
// filled too, and the test fails until the file saves and loads it.
//
// The snapshot's own structs (package observed, and package snapfile's Saved and
// Selection) must come back field for field. Kubernetes objects are written
// through the allow-lists (allow.go), so they must come back as their
// allow-list keeps them: present, with every field it allows.

// ownPackages are the packages whose structs must survive whole.
var ownPackages = map[string]bool{
	reflect.TypeFor[observed.Snapshot]().PkgPath(): true,
	reflect.TypeFor[snapfile.Saved]().PkgPath():    true, // Saved, Selection
	reflect.TypeFor[filler]().PkgPath():            true, // the structs of the tests below
}

func own(t reflect.Type) bool { return t.Kind() == reflect.Struct && ownPackages[t.PkgPath()] }

var (
	targetPtr   = reflect.TypeFor[*observed.Target]()
	timeType    = reflect.TypeFor[time.Time]()
	quantity    = reflect.TypeFor[resource.Quantity]()
	intOrString = reflect.TypeFor[intstr.IntOrString]()
	unstructPtr = reflect.TypeFor[*unstructured.Unstructured]()
	slotsType   = reflect.TypeFor[observed.Slots]()
)

// A slot declared by this test alone, so that slots holding the snapshot's
// own structs and Kubernetes objects are filled and compared whatever the
// sources declare.
var _ = observed.Declare[map[string]*observed.Provisioner]("roundTripProvisioners")

// holdsTargets says whether a value of type t may hold targets (which nest).
func holdsTargets(t reflect.Type) bool {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t == targetPtr
}

// filler sets every field it meets to a value of its own (strings, numbers
// and times count up, so two fields swapped by a codec differ), allocates
// every pointer and gives every map one entry and every slice one element.
// Targets nest levels deep: below that, the lists of nested targets are
// empty (read, none found), which is not zero either.
type filler struct {
	n      int
	levels int
	level  int
	// unfillable lists the fields of the snapshot's own structs no value
	// can be given (unexported or interfaces): no codec could save them.
	unfillable []string
}

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value, path string, depth int) {
	if depth > 40 { // no Kubernetes type nests this deep; a recursive one stops here
		return
	}
	t := v.Type()
	switch t {
	case timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Add(time.Duration(f.next()) * time.Second)))
		return
	case quantity:
		v.Set(reflect.ValueOf(resource.MustParse(fmt.Sprint(f.next()))))
		return
	case intOrString:
		v.Set(reflect.ValueOf(intstr.FromString(fmt.Sprintf("s%d", f.next()))))
		return
	case unstructPtr:
		var meta metav1.ObjectMeta
		f.fill(reflect.ValueOf(&meta).Elem(), path+".metadata", depth+1)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&meta)
		if err != nil {
			panic(err)
		}
		v.Set(reflect.ValueOf(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": fmt.Sprintf("example.com/v%d", f.next()), "kind": fmt.Sprintf("Kind%d", f.next()), "metadata": m,
			"spec": map[string]any{"secret": "never written"},
		}}))
		return
	case slotsType: // every declared slot, as its type
		slots := observed.Slots{}
		for _, name := range observed.SlotNames() {
			typ, _ := observed.SlotType(name)
			val := reflect.New(typ).Elem()
			f.fill(val, path+"["+name+"]", depth+1)
			slots[name] = val.Interface()
		}
		v.Set(reflect.ValueOf(slots))
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next() % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next() % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()%100) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.next()))
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if t == targetPtr {
			f.level++
			defer func() { f.level-- }()
		}
		f.fill(p.Elem(), path, depth+1)
		v.Set(p)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// Raw JSON (runtime.RawExtension, metav1.FieldsV1) must be JSON.
			v.SetBytes([]byte(fmt.Sprintf(`{"k":"s%d"}`, f.next())))
			return
		}
		n := 1
		if holdsTargets(t) && f.level >= f.levels {
			n = 0
		}
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			f.fill(s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(t)
		k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		f.fill(k, path+"[key]", depth+1)
		f.fill(e, fmt.Sprintf("%s[%v]", path, k), depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || sf.Type.Kind() == reflect.Interface {
				if own(t) {
					f.unfillable = append(f.unfillable, path+"."+sf.Name)
				}
				continue
			}
			f.fill(v.Field(i), path+"."+sf.Name, depth+1)
		}
	case reflect.Interface:
		// runtime.Object and the like in Kubernetes types: left empty.
	default:
		panic(fmt.Sprintf("%s: cannot fill a %s", path, t))
	}
}

// full returns a run's evidence with every field set, its targets nested
// levels deep (a target's dependents, claim users, namespace pods and held
// examples, and theirs).
func full(levels int) (snapfile.Saved, *filler) {
	f := &filler{levels: levels}
	var s snapfile.Saved
	f.fill(reflect.ValueOf(&s).Elem(), "", 0)
	return s, f
}

// comparison walks what was saved (want) and what was loaded (got) side by
// side and lists where they differ.
type comparison struct {
	saved   *observed.Snapshot // the snapshot saved, whose selectors decide the labels kept
	visited map[[2]*observed.Target]bool
	diffs   []string
	// kept caches, by path, what of want's values the allow-lists keep,
	// when want is compared many times.
	kept map[string]reflect.Value
}

func compareSaved(want, got snapfile.Saved, kept map[string]reflect.Value) []string {
	c := &comparison{saved: want.Snapshot, visited: map[[2]*observed.Target]bool{}, kept: kept}
	c.compare("", reflect.ValueOf(want), reflect.ValueOf(got))
	return c.diffs
}

func (c *comparison) differ(path, format string, args ...any) {
	c.diffs = append(c.diffs, path+": "+fmt.Sprintf(format, args...))
}

// holdsOwn says whether a value of type t holds one of the snapshot's own
// structs, which are compared field by field.
func holdsOwn(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Interface: // a slot's value, compared as what it holds
			return true
		default:
			return own(t)
		}
	}
}

func (c *comparison) compare(path string, want, got reflect.Value) {
	t := want.Type()
	if !holdsOwn(t) {
		c.compareForeign(path, want, got)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue // reported by the filler
			}
			w, g := want.Field(i), got.Field(i)
			p := path + "." + sf.Name
			if !w.IsZero() && g.IsZero() {
				c.differ(p, "not saved or not loaded (set before the trip, zero after)")
				continue
			}
			c.compare(p, w, g)
		}
	case reflect.Pointer:
		if want.IsNil() || got.IsNil() {
			if want.IsNil() != got.IsNil() {
				c.differ(path, "nil before the trip: %t, after: %t", want.IsNil(), got.IsNil())
			}
			return
		}
		if t == targetPtr {
			pair := [2]*observed.Target{want.Interface().(*observed.Target), got.Interface().(*observed.Target)}
			if c.visited[pair] {
				return
			}
			c.visited[pair] = true
		}
		c.compare(path, want.Elem(), got.Elem())
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && want.IsNil() != got.IsNil() {
			c.differ(path, "nil before the trip: %t, after: %t (not read and read-none are told apart)", want.IsNil(), got.IsNil())
			return
		}
		if want.Len() != got.Len() {
			c.differ(path, "%d elements before the trip, %d after", want.Len(), got.Len())
			return
		}
		for i := range want.Len() {
			c.compare(fmt.Sprintf("%s[%d]", path, i), want.Index(i), got.Index(i))
		}
	case reflect.Map:
		if want.IsNil() != got.IsNil() || want.Len() != got.Len() {
			c.differ(path, "%d entries before the trip (nil %t), %d after (nil %t)", want.Len(), want.IsNil(), got.Len(), got.IsNil())
			return
		}
		for _, k := range want.MapKeys() {
			g := got.MapIndex(k)
			if !g.IsValid() {
				c.differ(fmt.Sprintf("%s[%v]", path, k), "entry lost")
				continue
			}
			c.compare(fmt.Sprintf("%s[%v]", path, k), want.MapIndex(k), g)
		}
	case reflect.Interface:
		if want.IsNil() || got.IsNil() || want.Elem().Type() != got.Elem().Type() {
			c.differ(path, "%v before the trip, %v after", want, got)
			return
		}
		c.compare(path, want.Elem(), got.Elem())
	default:
		panic(fmt.Sprintf("%s: cannot compare a %s", path, t))
	}
}

// compareForeign compares values of other packages' types (Kubernetes
// objects, times, names): what was saved, as its allow-list keeps it, must
// be what was loaded.
func (c *comparison) compareForeign(path string, want, got reflect.Value) {
	if want.Type() == timeType {
		if !want.Interface().(time.Time).Equal(got.Interface().(time.Time)) {
			c.differ(path, "%v before the trip, %v after", want, got)
		}
		return
	}
	kept, ok := c.kept[path]
	if !ok {
		kept = snapfile.AllowListed(want, c.saved)
		if c.kept != nil {
			c.kept[path] = kept
		}
	}
	if !equality.Semantic.DeepEqual(kept.Interface(), got.Interface()) {
		w, _ := json.Marshal(kept.Interface())
		g, _ := json.Marshal(got.Interface())
		c.differ(path, "differs after the trip\n  want (as allowed): %s\n  got:               %s", w, g)
		return
	}
	if !want.IsZero() && got.IsZero() {
		c.differ(path, "nothing of it was kept")
	}
}

// trip saves s and loads it back.
func trip(t *testing.T, s snapfile.Saved) snapfile.Saved {
	t.Helper()
	var buf bytes.Buffer
	if err := snapfile.Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	out, err := snapfile.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// zeroFields lists the fields of the snapshot's own structs left zero in v:
// every one of them, once filled, must be set.
func zeroFields(path string, v reflect.Value, seen map[*observed.Target]bool) []string {
	t := v.Type()
	if !holdsOwn(t) {
		return nil
	}
	var out []string
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			p := path + "." + t.Field(i).Name
			if v.Field(i).IsZero() {
				out = append(out, p)
				continue
			}
			out = append(out, zeroFields(p, v.Field(i), seen)...)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if t == targetPtr {
			if seen[v.Interface().(*observed.Target)] {
				return nil
			}
			seen[v.Interface().(*observed.Target)] = true
		}
		out = zeroFields(path, v.Elem(), seen)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, zeroFields(fmt.Sprintf("%s[%d]", path, i), v.Index(i), seen)...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, zeroFields(fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k), seen)...)
		}
	case reflect.Interface:
		if !v.IsNil() {
			out = zeroFields(path, v.Elem(), seen)
		}
	}
	return out
}

// ownWalk lists, once per struct type and field, the fields of the
// snapshot's own structs held in a value (settable where the value is), and
// the own struct types it holds.
type ownWalk struct {
	fields  []ownField
	types   map[reflect.Type]bool
	seen    map[string]bool
	targets map[*observed.Target]bool
}

type ownField struct {
	path  string
	field reflect.Value
}

func walkOwn(v reflect.Value) *ownWalk {
	w := &ownWalk{types: map[reflect.Type]bool{}, seen: map[string]bool{}, targets: map[*observed.Target]bool{}}
	w.walk("", v)
	return w
}

func (w *ownWalk) walk(path string, v reflect.Value) {
	t := v.Type()
	if !holdsOwn(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.types[t] = true
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			p := path + "." + t.Field(i).Name
			if key := t.String() + "." + t.Field(i).Name; !w.seen[key] {
				w.seen[key] = true
				w.fields = append(w.fields, ownField{p, v.Field(i)})
			}
			w.walk(p, v.Field(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if t == targetPtr {
			if w.targets[v.Interface().(*observed.Target)] {
				return
			}
			w.targets[v.Interface().(*observed.Target)] = true
		}
		w.walk(path, v.Elem())
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			w.walk(fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k))
		}
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(path, v.Elem())
		}
	}
}

// ownTypes lists the snapshot's own struct types reachable from t, as the
// code declares them.
func ownTypes(t reflect.Type, out map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		ownTypes(t.Elem(), out)
	case reflect.Map:
		ownTypes(t.Key(), out)
		ownTypes(t.Elem(), out)
	case reflect.Struct:
		if !own(t) || out[t] {
			return
		}
		out[t] = true
		for i := range t.NumField() {
			ownTypes(t.Field(i).Type, out)
		}
	}
}

// Every field of every struct a snapshot is made of, set, survives a trip
// through a snapshot file: the snapshot's own structs field for field,
// Kubernetes objects as their allow-lists keep them.
func TestRoundTripKeepsEveryField(t *testing.T) {
	in, f := full(2)
	if len(f.unfillable) > 0 {
		t.Errorf("fields no codec can save (unexported, or interfaces): %v", f.unfillable)
	}
	if zero := zeroFields("", reflect.ValueOf(in), map[*observed.Target]bool{}); len(zero) > 0 {
		t.Fatalf("the filler left fields zero: %v", zero)
	}
	// Every own struct the code declares a snapshot holds is in the filled
	// one (Contents in the nested targets, KubeletVolume in the Kubelets...).
	declared := map[reflect.Type]bool{}
	ownTypes(reflect.TypeFor[snapfile.Saved](), declared)
	filled := walkOwn(reflect.ValueOf(in)).types
	for typ := range declared {
		if !filled[typ] {
			t.Errorf("%s is not in the filled snapshot", typ)
		}
	}
	if len(declared) < 10 {
		t.Errorf("only %d structs reached: %v", len(declared), declared)
	}

	out := trip(t, in)
	kept := map[string]reflect.Value{}
	lost := compareSaved(in, out, kept)
	for _, d := range lost {
		t.Error(d)
	}
	if got, want := len(out.Snapshot.AllTargets()), len(in.Snapshot.AllTargets()); got != want || want < 5 {
		t.Errorf("%d targets after the trip, %d before", got, want)
	}

	// The comparison is blind to no field: each field of each own struct,
	// lost on the way back (zeroed after loading), is reported.
	t.Run("every lost field is reported", func(t *testing.T) {
		if len(lost) > 0 {
			t.Skip("the trip already loses fields")
		}
		walked := walkOwn(reflect.ValueOf(&out).Elem())
		for _, of := range walked.fields {
			if !of.field.CanSet() {
				t.Errorf("%s cannot be zeroed to prove it is compared", of.path)
				continue
			}
			was := reflect.New(of.field.Type()).Elem()
			was.Set(of.field)
			of.field.SetZero()
			diffs := compareSaved(in, out, kept)
			of.field.Set(was)
			if !slices.ContainsFunc(diffs, func(d string) bool { return strings.HasPrefix(d, of.path+":") }) {
				t.Errorf("%s lost: not reported (%v)", of.path, diffs)
			}
		}
		if diffs := compareSaved(in, out, kept); len(diffs) > 0 {
			t.Fatalf("restoring the fields: %v", diffs)
		}
		t.Logf("%d fields of %d structs lost one at a time: each reported", len(walked.fields), len(walked.types))
	})

	// A field added to one of the snapshot's structs and not carried by the
	// file fails the test: contents and kubelet stand for observed.Contents
	// and observed.Kubelet the day a field is added to them that the codec
	// does not save (a hand-kept copy of the struct, a field it skips), by
	// sending only the fields the real structs have through the file.
	t.Run("a field added and not saved fails", func(t *testing.T) {
		type contents struct {
			observed.Contents
			Pending map[string]int // the new field
		}
		type kubelet struct {
			observed.Kubelet
			Restarts int // the new field
		}
		var c contents
		var k kubelet
		f := &filler{levels: 2, level: 1}
		f.fill(reflect.ValueOf(&c).Elem(), "", 0)
		f.fill(reflect.ValueOf(&k).Elem(), "", 0)
		var u *unstructured.Unstructured
		f.fill(reflect.ValueOf(&u).Elem(), "", 0)
		s := snapfile.Saved{Snapshot: &observed.Snapshot{
			Targets:  []*observed.Target{{Ref: observed.ObjectRef{Name: "ns"}, Object: u, Contents: &c.Contents}},
			Kubelets: map[string]*observed.Kubelet{"node-1": &k.Kubelet},
		}}
		got := trip(t, s).Snapshot
		for _, tc := range []struct {
			name      string
			want, got any
			field     string
		}{
			{"Contents", c, contents{Contents: *got.Targets[0].Contents}, ".Pending"},
			{"Kubelet", k, kubelet{Kubelet: *got.Kubelets["node-1"]}, ".Restarts"},
		} {
			cmp := &comparison{saved: s.Snapshot, visited: map[[2]*observed.Target]bool{}}
			cmp.compare("", reflect.ValueOf(tc.want), reflect.ValueOf(tc.got))
			if len(cmp.diffs) != 1 || !strings.HasPrefix(cmp.diffs[0], tc.field+":") {
				t.Errorf("%s grown by %s, not saved: reported %q, want that field alone", tc.name, tc.field, cmp.diffs)
			}
		}
	})
}
