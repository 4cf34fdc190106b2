package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The commonest mistakes are answered with what was meant (issue 26): a
// terminating pod asked for without -n is found in its namespace by one
// list across namespaces, and the error says which -n to add; a bare name
// suggests TYPE/NAME, naming the pod; both exit 1, on one line.
func TestMistakesSuggestWhatWasMeant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "mistakes")
	const name = "forgot-n-0" // unique in the lab: the lookup spans namespaces
	pod := scenario.PodSpec(ns, name, liveNode)
	pod.Finalizers = []string{"example.com/hold"}
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, name, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The lab's kubeconfig namespace is default.
		{[]string{"why", "pod/" + name}, `error: pods "` + name + `" not found in namespace "default"; it is terminating in namespace "` + ns + `": add -n ` + ns},
		{[]string{"why", "pod/" + name, "-n", "kube-system"}, `not found in namespace "kube-system"; it is terminating in namespace "` + ns + `": use -n ` + ns},
		{[]string{"why", name, "-n", ns}, `error: the server doesn't have a resource type "` + name + `"; did you mean pod/` + name + `? (an object is named TYPE/NAME)`},
		{[]string{"list", name, "-A"}, `did you mean pod/` + name + ` -n ` + ns + `? (an object is named TYPE/NAME)`},
		{[]string{"why", "no-such-thing-0", "-n", ns}, `; to name an object, give its type: TYPE/NAME (pod/no-such-thing-0)`},
	} {
		res := run(t, tc.args...)
		if res.code != 1 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, tc.want+"\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line ending %q", tc.args, res.code, res.stdout, res.stderr, tc.want)
		}
	}
}
