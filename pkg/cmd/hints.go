package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// maxHints is how many places a hint names.
const maxHints = 3

// hint adds to the error of a mistake what the user likely meant: the
// namespace where a named object is terminating (-n forgotten), the
// objects a bare name names (TYPE/NAME forgotten), or the types a mistyped
// one is near. The error stays the
// same (exit 1); the text is escaped where the error is printed (Explain).
func (o *Options) hint(ctx context.Context, c *collect.Collector, scope collect.Scope, err error) error {
	var notFound *collect.NotFoundError
	var unknown *collect.UnknownTypeError
	switch {
	case errors.As(err, &notFound) && len(notFound.TerminatingIn) > 0:
		return fmt.Errorf("%w; %s", err, o.namespaceHint(notFound.TerminatingIn))
	case errors.As(err, &unknown) && len(o.args) == 1 && unknown.Arg == o.args[0]:
		return fmt.Errorf("%w; %s", err, o.nameHint(ctx, c, scope, unknown.Arg))
	case errors.As(err, &unknown):
		if near := nearTypes(c, unknown.Arg); len(near) > 0 {
			return fmt.Errorf("%w; did you mean %s?", err, orList(near))
		}
	}
	return err
}

// nearTypes are the resource types the server serves that a mistyped one
// is nearest (within two edits of the type's plural, singular or short
// name), each by its plural: pdo -> pods (po), nodse -> nodes (node).
func nearTypes(c *collect.Collector, typed string) []string {
	lists, _ := c.Clients.Discovery.ServerPreferredResources() // a partial answer still names most types
	typed = strings.ToLower(typed)
	best, near := 3, []string{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			d := 3 // more than two edits: not near
			for _, name := range append([]string{r.Name, r.SingularName}, r.ShortNames...) {
				if name != "" {
					d = min(d, catalog.EditDistance(typed, name))
				}
			}
			switch {
			case d < best:
				best, near = d, []string{r.Name}
			case d == best && d < 3 && !slices.Contains(near, r.Name):
				near = append(near, r.Name)
			}
		}
	}
	slices.Sort(near)
	return near
}

// namespaceHint: `it is terminating in namespace "shop": add -n shop`.
func (o *Options) namespaceHint(namespaces []string) string {
	verb := "add"
	if o.namespaceGiven {
		verb = "use"
	}
	quoted, flags := make([]string, len(namespaces)), make([]string, len(namespaces))
	for i, ns := range namespaces {
		quoted[i], flags[i] = fmt.Sprintf("%q", ns), "-n "+ns
	}
	where := "namespace"
	if len(namespaces) > 1 {
		where = "namespaces"
	}
	return fmt.Sprintf("it is terminating in %s %s: %s %s", where, orList(quoted), verb, orList(flags))
}

// nameHint is said of an argument that is no type: a name given without
// its type. It names the terminating objects of that name in scope, found
// by a scan the server filters on the name.
func (o *Options) nameHint(ctx context.Context, c *collect.Collector, scope collect.Scope, name string) string {
	byName := collect.Scope{Namespace: scope.Namespace, AllNamespaces: scope.AllNamespaces,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	found, _ := o.scanAll(ctx, c, byName)
	var meant []string
	for _, f := range found {
		if f.Object.GetName() != name {
			continue // a server that ignores the field selector
		}
		m := report.Name(f.Ref())
		if ns := f.Object.GetNamespace(); ns != "" && scope.AllNamespaces {
			m += " -n " + ns
		}
		meant = append(meant, m)
	}
	if len(meant) == 0 {
		return fmt.Sprintf("to name an object, give its type: TYPE/NAME (pod/%s)", name)
	}
	return fmt.Sprintf("did you mean %s? (an object is named TYPE/NAME)", orList(meant))
}

// orList is "a", "a or b", "a, b or c", "a, b or c (and 2 more)".
func orList(items []string) string {
	shown := items[:min(len(items), maxHints)]
	s := shown[len(shown)-1]
	if len(shown) > 1 {
		s = strings.Join(shown[:len(shown)-1], ", ") + " or " + s
	}
	if len(items) > maxHints {
		s += fmt.Sprintf(" (and %d more)", len(items)-maxHints)
	}
	return s
}
