package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Issue 39: an empty report is read at night as "all clear". It is one
// only when the run looked where things are stuck: a namespace that does
// not exist is an error, as kubectl's; an empty namespace says what is
// being deleted elsewhere; a namespace named on the command line that is
// not being deleted is diagnosed by its contents.

// namespaceMissing is an error when the run's namespace does not exist
// (a typo of -n, or a kubeconfig's stale default): nothing in it can be
// stuck, and the report would say so. One GET, made only when the scan
// found nothing; a read that is refused proves nothing and is no error.
func (o *Options) namespaceMissing(ctx context.Context, clients *kube.Clients) error {
	_, err := clients.Metadata.Resource(namespacesResource).Get(ctx, o.namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %q not found", o.namespace)
	}
	return nil
}

var (
	namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	podsResource       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// elsewhere says what is being deleted outside the run's namespace, for a
// report that found nothing in it: pods and namespaces, the objects most
// often stuck, from two metadata lists. "" when nothing is, when either
// list is refused (it would be a guess), or when the run looked for other
// things (list configmaps, -l app=web: pods elsewhere are not what it
// asked about).
func (o *Options) elsewhere(ctx context.Context, clients *kube.Clients) string {
	if !o.looksForPodsOrNamespaces(clients) {
		return ""
	}
	pods, err := clients.Metadata.Resource(podsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	namespaces, err := clients.Metadata.Resource(namespacesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	inNamespaces := map[string]bool{}
	podCount := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil && p.Namespace != o.namespace {
			podCount++
			inNamespaces[p.Namespace] = true
		}
	}
	nsCount := 0
	for _, ns := range namespaces.Items {
		if ns.DeletionTimestamp != nil && ns.Name != o.namespace {
			nsCount++
		}
	}
	var parts []string
	if podCount > 0 {
		parts = append(parts, fmt.Sprintf("%s being deleted in %s", report.Count(podCount, "pod"), report.Count(len(inNamespaces), "other namespace")))
	}
	if nsCount > 0 {
		parts = append(parts, fmt.Sprintf("%s being deleted", report.Count(nsCount, "other namespace")))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Elsewhere: %s (kubectl terminating list -A).", strings.Join(parts, ", "))
}

// insideNamespaces: of the namespaces named on the command line, those not
// being deleted are diagnosed by their contents (what in them is being
// deleted), as -n NAME would.
func (o *Options) insideNamespaces(ctx context.Context, c *collect.Collector, scope collect.Scope, found []collect.Found) ([]collect.Found, error) {
	for _, f := range slices.Clone(found) {
		if f.Terminating() || !isNamespace(f) {
			continue
		}
		ref := f.Ref()
		inside := scope
		inside.Namespace, inside.AllNamespaces = ref.Name, false
		mappings, err := c.ListableMappings(inside)
		if err != nil {
			return nil, err
		}
		contents, err := c.Scan(ctx, inside, mappings)
		if err != nil {
			return nil, err
		}
		if len(contents) == 0 {
			fmt.Fprintf(o.stderr(), "namespace/%s is not being deleted (no metadata.deletionTimestamp), nor is anything in it\n", report.Safe(ref.Name))
		} else {
			fmt.Fprintf(o.stderr(), "namespace/%s is not being deleted (no metadata.deletionTimestamp); being deleted in it: %s\n",
				report.Safe(ref.Name), report.Count(len(contents), "object"))
		}
		found = append(found, contents...)
	}
	return found, nil
}

// isNamespace: the object found is a Namespace (core v1).
func isNamespace(f collect.Found) bool {
	return f.GVR.Group == "" && f.GVR.Resource == "namespaces"
}

// looksForPodsOrNamespaces: the run's types (none named: every type)
// include pods or namespaces, and no selector narrows them.
func (o *Options) looksForPodsOrNamespaces(clients *kube.Clients) bool {
	if o.LabelSelector != "" || o.FieldSelector != "" {
		return false
	}
	if len(o.requests) == 0 {
		return true
	}
	return slices.ContainsFunc(o.requests, func(r collect.Request) bool {
		gvr, err := clients.Mapper.ResourceFor(schema.ParseGroupResource(r.Resource).WithVersion(""))
		return err == nil && (gvr.GroupResource() == podsResource.GroupResource() || gvr.GroupResource() == namespacesResource.GroupResource())
	})
}
