package cmd

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// withPodIn adds a copy of the cluster's pod name in namespace ns.
func withPodIn(name, ns string) []runtime.Object {
	objs := cluster()
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == name {
			cp := p.DeepCopy()
			cp.Namespace, cp.UID = ns, cp.UID+k8stypes.UID("-"+ns)
			return append(objs, cp)
		}
	}
	panic(name)
}

// A named object not found in the namespace (-n forgotten) is looked for,
// terminating, in the others, by one list across namespaces that the server
// filters on its name; the error says which -n to add. Exit 1 still.
func TestMissingNamespaceIsFound(t *testing.T) {
	var lists []k8stesting.ListActionImpl
	record := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			lists = append(lists, a.(k8stesting.ListActionImpl))
			return false, nil, nil
		})
	}
	for _, tc := range []struct {
		objs []runtime.Object
		args []string
		want string
	}{
		{cluster(), []string{"why", "pod/web-0"}, `pods "web-0" not found in namespace "default"; it is terminating in namespace "shop": add -n shop`},
		{cluster(), []string{"list", "pod/web-0", "-n", "east"}, `pods "web-0" not found in namespace "east"; it is terminating in namespace "shop": use -n shop`},
		{withPodIn("web-0", "east"), []string{"why", "po/web-0"}, `it is terminating in namespaces "east" or "shop": add -n east or -n shop`},
		// Not terminating elsewhere: nothing to suggest.
		{cluster(), []string{"why", "pod/ok-0"}, `pods "ok-0" not found in namespace "default"`},
	} {
		lists = nil
		_, _, err := execute(t, fakes(t, tc.objs, record), tc.args...)
		if ExitCode(err) != ExitError || !strings.HasSuffix(Explain(err), tc.want) {
			t.Errorf("%v: exit %d, error %v; want 1 and %q", tc.args, ExitCode(err), err, tc.want)
		}
		if len(lists) != 1 || lists[0].Namespace != "" || lists[0].ListRestrictions.Fields.String() != "metadata.name="+strings.SplitN(tc.args[1], "/", 2)[1] {
			t.Errorf("%v: the lookup listed %+v, want one list of pods across namespaces by name", tc.args, lists)
		}
	}
}

// A bare name is not taken for a type silently: the error suggests
// TYPE/NAME, naming the terminating objects of that name in scope.
func TestBareNameSuggestsTypeSlashName(t *testing.T) {
	for _, tc := range []struct {
		objs []runtime.Object
		args []string
		want string
	}{
		{cluster(), []string{"why", "web-0", "-n", "shop"}, `the server doesn't have a resource type "web-0"; did you mean pod/web-0? (an object is named TYPE/NAME)`},
		{cluster(), []string{"list", "cache-0", "-n", "shop"}, `did you mean pod/cache-0? (an object is named TYPE/NAME)`},
		{withPodIn("web-0", "east"), []string{"why", "web-0", "-A"}, `did you mean pod/web-0 -n east or pod/web-0 -n shop? (an object is named TYPE/NAME)`},
		// Nothing of that name: the form to use.
		{cluster(), []string{"why", "web-0"}, `the server doesn't have a resource type "web-0"; to name an object, give its type: TYPE/NAME (pod/web-0)`},
		{cluster(), []string{"why", "ok-0", "-n", "shop"}, `; to name an object, give its type: TYPE/NAME (pod/ok-0)`},
		// A type that does not exist, with names or a slash: no guess.
		{cluster(), []string{"why", "nosuch/x"}, `the server doesn't have a resource type "nosuch"`},
		{cluster(), []string{"why", "nosuch", "x", "-n", "shop"}, `the server doesn't have a resource type "nosuch"`},
	} {
		_, _, err := execute(t, fakes(t, tc.objs, nil), tc.args...)
		if ExitCode(err) != ExitError || !strings.HasSuffix(Explain(err), tc.want) {
			t.Errorf("%v: exit %d, error %v; want 1 and %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}
