package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The namespaces of cases 6 and 7.
const (
	bigNamespace  = "big"  // case 6: held, read by the namespace controller
	liveNamespace = "apps" // case 6: live objects beside it
)

// apfSeats runs every bench lab with priority and fairness, as a real
// cluster has it (kube-apiserver's default of 400 reads at once): the plugin
// follows the server's pace there, and so does the floor.
const apfSeats = 400

// manyTypesCase is issue 38's first shape: a cluster of many types (the
// scale's manyCRDs in manyGroups API groups), a few hundred live objects, and
// a namespace deleted while the namespace controller runs, held by heldCRs
// custom resources and heldConfigMaps configmaps, each with a finalizer: the
// controller's conditions name the types left. `why ns/big` reads those
// types only (the index), `why ns/big --full-scan` every type, beside the
// floor and the one-liner over the namespace; then `list -A` beside the floor
// over the cluster.
func manyTypesCase(ctx context.Context, o Options, sz sizes) ([]Result, error) {
	l, px, kc, env, err := labWith(ctx, o, lab.Options{NamespaceController: true})
	if err != nil {
		return nil, err
	}
	defer cleanup(l, px)
	t := time.Now()
	kinds := Kinds(sz.manyCRDs, sz.manyGroups)
	if err := CRDs(ctx, env, kinds); err != nil {
		return nil, err
	}
	progress("%d CRDs in %d groups served in %s", sz.manyCRDs, sz.manyGroups, time.Since(t).Round(time.Second))
	t = time.Now()
	if err := env.Namespace(ctx, liveNamespace); err != nil {
		return nil, err
	}
	if err := Objects(ctx, env, liveNamespace, kinds[:sz.kinds], sz.liveObjects); err != nil {
		return nil, err
	}
	if err := env.Namespace(ctx, bigNamespace); err != nil {
		return nil, err
	}
	if err := objects(ctx, env, bigNamespace, kinds[:3], sz.heldCRs, 1); err != nil {
		return nil, err
	}
	for i := range sz.heldConfigMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("settings-%02d", i), Finalizers: []string{Finalizer}}}
		if _, err := env.Client.CoreV1().ConfigMaps(bigNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, bigNamespace, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	if err := scenario.Until(ctx, 3*time.Minute, "the namespace controller's conditions on "+bigNamespace, func(ctx context.Context) (bool, error) {
		ns, err := env.Client.CoreV1().Namespaces().Get(ctx, bigNamespace, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var content, finalizers bool
		for _, c := range ns.Status.Conditions {
			content = content || c.Type == corev1.NamespaceContentRemaining && c.Status == corev1.ConditionTrue
			finalizers = finalizers || c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		}
		return content && finalizers, nil
	}); err != nil {
		return nil, err
	}
	progress("%d live objects, namespace %s held by %d custom resources and %d configmaps, its conditions written, in %s",
		sz.liveObjects, bigNamespace, sz.heldCRs, sz.heldConfigMaps, time.Since(t).Round(time.Second))
	time.Sleep(sz.settle) // past the plugin's settle time: the namespace counts as stuck
	if o.Keep {
		return nil, keepLab(ctx, kc)
	}

	index := pluginRun(o, kc, pluginCount, "why", "ns/"+bigNamespace)
	full := pluginRun(o, kc, pluginCount, "why", "ns/"+bigNamespace, "--full-scan")
	rs, err := measureAll(px, manyTypesNamespaceCase(sz), []program{index, full, floorRun(o, kc, bigNamespace), oneLinerRun(o, kc, bigNamespace, 1)}, o.QuickRuns)
	if err != nil {
		return rs, err
	}
	for i, p := range []program{index, full} {
		if rs[i].Read, err = contentsRead(p); err != nil {
			return rs, err
		}
	}
	all, err := measureAll(px, manyTypesClusterCase(sz), []program{pluginRun(o, kc, itemsCount, "list", "-A"), floorRun(o, kc, "")}, o.QuickRuns)
	return append(rs, all...), err
}

func manyTypesNamespaceCase(sz sizes) string {
	return fmt.Sprintf("6: %d CRDs in %d groups, namespace %s held", sz.manyCRDs, sz.manyGroups, bigNamespace)
}

func manyTypesClusterCase(sz sizes) string {
	return fmt.Sprintf("6: %d CRDs in %d groups, the cluster", sz.manyCRDs, sz.manyGroups)
}

// contentsRead runs p once and says how its report read the namespace's
// contents: "index, N types" or "full scan, N types (why)".
func contentsRead(p program) (string, error) {
	out, err := p.cmd().Output()
	if err != nil && !isExit(err, 2) {
		return "", fmt.Errorf("%s: %v", p.name, err)
	}
	var r struct {
		Items []struct {
			ContentsRead *struct {
				Index bool
				Types int
				Why   string
			} `json:"contentsRead"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Items) == 0 || r.Items[0].ContentsRead == nil {
		return "", fmt.Errorf("%s: no contentsRead in its report (%v)", p.name, err)
	}
	read := r.Items[0].ContentsRead
	if read.Index {
		return fmt.Sprintf("index, %d types", read.Types), nil
	}
	return fmt.Sprintf("full scan, %d types (%s)", read.Types, read.Why), nil
}

// heldLeftoversCase is issue 38's second shape: heldNamespaces terminating
// namespaces, each with heldPerNamespace leftovers over the scale's kinds,
// every one deleted and held by a finalizer (the namespace controller off).
// list -A and why -A beside the floor and the one-liner over the cluster,
// with their CPU and the lengths of their tables; list -A also as the table
// a person reads (the JSON of 3,000 held objects is 18 MB, most of what
// the -o json run spends beyond the diagnosis).
func heldLeftoversCase(ctx context.Context, o Options, sz sizes) ([]Result, error) {
	l, px, kc, env, kinds, err := labWithKinds(ctx, o, lab.Options{}, sz)
	if err != nil {
		return nil, err
	}
	defer cleanup(l, px)
	t := time.Now()
	for i := range sz.heldNamespaces {
		ns := fmt.Sprintf("held-%02d", i)
		if err := env.Namespace(ctx, ns); err != nil {
			return nil, err
		}
		if err := objects(ctx, env, ns, kinds[:sz.kinds], sz.heldPerNamespace, 1); err != nil {
			return nil, err
		}
		if err := deleteEvery(ctx, env, ns, kinds[:sz.kinds], sz.heldPerNamespace, 1); err != nil {
			return nil, err
		}
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
	}
	progress("%d terminating namespaces of %d held leftovers each in %s", sz.heldNamespaces, sz.heldPerNamespace, time.Since(t).Round(time.Second))
	time.Sleep(sz.settle)
	return measureClusterWide(ctx, o, px, kc, heldLeftoversCaseName(sz), tableRun(o, kc, "list", "-A"), floorRun(o, kc, ""), oneLinerRun(o, kc, "", 1))
}

func heldLeftoversCaseName(sz sizes) string {
	return fmt.Sprintf("7: %d held leftovers in %d terminating namespaces", sz.heldNamespaces*sz.heldPerNamespace, sz.heldNamespaces)
}

// tableLines is the length of the plugin's table for args: what a person reads.
func tableLines(o Options, kubeconfig string, args ...string) (int, error) {
	out, err := exec.Command(o.Plugin, append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
	if err != nil && !isExit(err, 2) {
		return 0, fmt.Errorf("%v: %v", args, err)
	}
	return strings.Count(string(out), "\n"), nil
}
