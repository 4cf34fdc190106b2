package collect

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// Request is one resource type the user named, with the names asked for
// (none: every terminating object of that type in scope).
type Request struct {
	Resource string
	Names    []string
}

// ParseArgs reads kubectl's argument forms: TYPE/NAME..., TYPE NAME..., or TYPE.
func ParseArgs(args []string) ([]Request, error) {
	if len(args) == 0 {
		return nil, nil
	}
	if strings.Contains(args[0], "/") {
		var reqs []Request
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
				return nil, fmt.Errorf("arguments in resource/name form must have a single resource and name, got %q", a)
			}
			reqs = append(reqs, Request{Resource: typ, Names: []string{name}})
		}
		return reqs, nil
	}
	for _, a := range args[1:] {
		if strings.Contains(a, "/") {
			return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (got %q after %q)", a, args[0])
		}
	}
	// As kubectl: several types separated by commas (pods,pvc), each with
	// the names that follow.
	var reqs []Request
	for _, typ := range strings.Split(args[0], ",") {
		if typ == "" {
			return nil, fmt.Errorf("empty resource type in %q", args[0])
		}
		reqs = append(reqs, Request{Resource: typ, Names: args[1:]})
	}
	return reqs, nil
}

// Mapping resolves a resource argument (plural, singular, short name, kind,
// resource.group) through the RESTMapper.
func Mapping(mapper meta.RESTMapper, arg string) (*meta.RESTMapping, error) {
	gvk, err := kindFor(mapper, arg)
	if err == nil {
		var m *meta.RESTMapping
		if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m, nil
		}
	}
	if meta.IsNoMatchError(err) {
		return nil, &UnknownTypeError{Arg: arg}
	}
	return nil, err // discovery itself failed: unreachable, unauthorized...
}

func kindFor(mapper meta.RESTMapper, arg string) (schema.GroupVersionKind, error) {
	fullySpecified, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if fullySpecified != nil {
		if gvk, err := mapper.KindFor(*fullySpecified); err == nil {
			return gvk, nil
		}
	}
	if gvk, err := mapper.KindFor(gr.WithVersion("")); err == nil {
		return gvk, nil
	}
	// Kind.group, as in "Widget.example.com".
	fullKind, gk := schema.ParseKindArg(arg)
	if fullKind != nil {
		if m, err := mapper.RESTMapping(fullKind.GroupKind(), fullKind.Version); err == nil {
			return m.GroupVersionKind, nil
		}
	}
	m, err := mapper.RESTMapping(gk)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return m.GroupVersionKind, nil
}

// UnknownTypeError: the server serves no resource type by that name.
type UnknownTypeError struct{ Arg string }

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("the server doesn't have a resource type %q", e.Arg)
}

// NotFoundError is returned for a named object that does not exist.
type NotFoundError struct {
	Resource, Namespace, Name string
	// TerminatingIn lists the other namespaces where an object of that
	// type and name is terminating: where a user who forgot -n meant.
	TerminatingIn []string
}

func (e *NotFoundError) Error() string {
	if e.Namespace != "" {
		return fmt.Sprintf("%s %q not found in namespace %q", e.Resource, e.Name, e.Namespace)
	}
	return fmt.Sprintf("%s %q not found", e.Resource, e.Name)
}

// Resolve reads the objects the user named. A request without names scans
// that type in scope. Missing objects are errors unless ignoreNotFound.
func (c *Collector) Resolve(ctx context.Context, reqs []Request, scope Scope, ignoreNotFound bool) ([]Found, error) {
	defer c.track("the objects named", 0).finish()
	var out []Found
	for _, r := range reqs {
		m, err := Mapping(c.Clients.Mapper, r.Resource)
		if err != nil {
			return nil, err
		}
		namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
		if len(r.Names) == 0 {
			found, err := c.Scan(ctx, scope, []*meta.RESTMapping{m})
			if err != nil {
				return nil, err
			}
			out = append(out, found...)
			continue
		}
		if namespaced && scope.AllNamespaces {
			return nil, fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
		}
		for _, name := range r.Names {
			obj, getErr := c.get(ctx, m, namespaced, scope.Namespace, name)
			switch {
			case apierrors.IsNotFound(getErr):
				if ignoreNotFound {
					continue
				}
				notFound := &NotFoundError{Resource: QualifiedResource(m.Resource), Name: name}
				if namespaced {
					notFound.Namespace = scope.Namespace
					notFound.TerminatingIn = c.terminatingIn(ctx, m.Resource, name)
				}
				return nil, notFound
			case getErr != nil:
				return nil, getErr
			}
			out = append(out, Found{GVR: m.Resource, Object: obj, Whole: !metadataOnly[m.Resource.GroupResource()]})
		}
	}
	return out, nil
}

// metadataOnly are the types whose rules read nothing but metadata, and
// whose content must not be read at all: a Secret's data would otherwise
// be in the plugin's memory and, at -v 8, in its log.
var metadataOnly = map[schema.GroupResource]bool{{Resource: "secrets"}: true, {Resource: "configmaps"}: true}

// get reads one named object: through the metadata client for the types
// in metadataOnly, else whole.
func (c *Collector) get(ctx context.Context, m *meta.RESTMapping, namespaced bool, ns, name string) (*unstructured.Unstructured, error) {
	if !metadataOnly[m.Resource.GroupResource()] {
		var ri dynamic.ResourceInterface = c.Clients.Dynamic.Resource(m.Resource)
		if namespaced {
			ri = c.Clients.Dynamic.Resource(m.Resource).Namespace(ns)
		}
		return ri.Get(ctx, name, metav1.GetOptions{})
	}
	var mi metadata.ResourceInterface = c.Clients.Metadata.Resource(m.Resource)
	if namespaced {
		mi = c.Clients.Metadata.Resource(m.Resource).Namespace(ns)
	}
	pom, err := mi.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(m.GroupVersionKind)
	objectMeta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pom.ObjectMeta)
	if err != nil {
		return nil, err
	}
	u.Object["metadata"] = objectMeta
	return u, nil
}

// maxElsewhere bounds the list terminatingIn makes: a hint needs a few.
const maxElsewhere = 100

// terminatingIn lists the namespaces where an object of type gvr named name
// is terminating, in one list across namespaces that the server filters on
// the name (metadata only); none when that cannot be read.
func (c *Collector) terminatingIn(ctx context.Context, gvr schema.GroupVersionResource, name string) []string {
	list, err := c.Clients.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), Limit: maxElsewhere})
	if err != nil {
		return nil
	}
	var out []string
	for _, it := range list.Items {
		if it.Name == name && it.DeletionTimestamp != nil {
			out = append(out, it.Namespace)
		}
	}
	sort.Strings(out)
	return out
}
