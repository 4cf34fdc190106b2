package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Issue 36: operators the catalogue has never seen, emulated as they write
// (their own field managers, finalizers added to an object a person created,
// status through the status subresource). What the API records answers
// without knowing them: the controller's words in any shape, and who wrote
// the object since its deletion began.
func TestOperatorsNeverSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "openworld")
	// AWS Controllers for Kubernetes: runtime apis/core/v1alpha1/conditions.go
	// (ACK.Terminal, no reason), rds-controller descriptor.go (the
	// finalizer), the binary /bin/controller (its field manager).
	rds := scenario.Operator{Group: "rds.services.k8s.aws", Kind: "DBInstance", Plural: "dbinstances",
		Manager: "controller", Finalizer: "finalizers.rds.services.k8s.aws/DBInstance"}
	// Velero: restore_controller.go's ExternalResourcesFinalizer, the
	// server's user agent velero-server, RestoreStatus.progress.
	velero := scenario.Operator{Group: "velero.io", Kind: "Restore", Plural: "restores",
		Manager: "velero-server", Finalizer: "restores.velero.io/external-resources-finalizer"}
	// A cloud-resource controller that reports in status.error.
	cloud := scenario.Operator{Group: "sql.openworld.e2e.example.com", Kind: "Instance", Plural: "instances",
		Manager: "cloudsql-manager", Finalizer: "sql.openworld.e2e.example.com/instance"}
	// The restore's backup (spec.backupName) and the backup's storage
	// location (spec.storageLocation), whose status velero-server writes.
	backups := scenario.Operator{Group: "velero.io", Kind: "Backup", Plural: "backups", Manager: "velero-server"}
	locations := scenario.Operator{Group: "velero.io", Kind: "BackupStorageLocation", Plural: "backupstoragelocations", Manager: "velero-server"}
	for _, o := range []scenario.Operator{rds, velero, cloud, backups, locations} {
		if err := env.StatusCRD(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, ctl := range []string{"ack-rds-controller", "velero", "cloudsql-operator"} {
		if err := env.Controller(ctx, ns, ctl, liveNode); err != nil {
			t.Fatal(err)
		}
	}
	restoring := func(n int) map[string]any {
		return map[string]any{"phase": "InProgress", "progress": map[string]any{"totalItems": int64(500), "itemsRestored": int64(10 * n)}}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.Adopt(ctx, rds, ns, "orders-db", nil, map[string]any{"conditions": []any{
		map[string]any{"type": "ACK.ResourceSynced", "status": "True", "lastTransitionTime": metaNow()}}}))
	must(env.Adopt(ctx, velero, ns, "nightly", nil, restoring(0)))
	must(env.Adopt(ctx, velero, ns, "last-week", nil, map[string]any{"phase": "Completed"}))
	must(env.Adopt(ctx, cloud, ns, "billing", nil, map[string]any{"state": "RUNNABLE"}))
	must(env.Adopt(ctx, locations, ns, "default", map[string]any{"provider": "aws", "objectStorage": map[string]any{"bucket": "backups"}},
		map[string]any{"phase": "Unavailable", "message": `BackupStorageLocation "default" is unavailable: rpc error: code = Unknown desc = NoCredentialProviders: no valid providers in chain`}))
	must(env.Adopt(ctx, backups, ns, "nightly-0300", map[string]any{"storageLocation": "default"}, map[string]any{"phase": "Completed"}))
	must(env.Adopt(ctx, velero, ns, "from-nightly", map[string]any{"backupName": "nightly-0300"}, map[string]any{"phase": "Completed"}))
	// A restore whose backup was deleted: no such backup.
	must(env.Adopt(ctx, velero, ns, "from-deleted", map[string]any{"backupName": "deleted-0300"}, map[string]any{"phase": "Completed"}))
	time.Sleep(1100 * time.Millisecond) // managedFields and deletionTimestamp are to the second: the writes come before the deletion
	deleted := time.Now()
	for _, o := range []struct {
		op   scenario.Operator
		name string
	}{{rds, "orders-db"}, {velero, "nightly"}, {velero, "last-week"}, {cloud, "billing"}, {velero, "from-nightly"}, {velero, "from-deleted"}} {
		must(env.Delete(ctx, o.op, ns, o.name))
	}
	// After the delete: ACK's delete call fails terminally, the cloud
	// controller records its error, the nightly restore keeps counting.
	must(env.OperatorWrites(ctx, rds, ns, "orders-db", map[string]any{"conditions": []any{
		map[string]any{"type": "ACK.ResourceSynced", "status": "True", "lastTransitionTime": metaNow()},
		map[string]any{"type": "ACK.Terminal", "status": "True", "lastTransitionTime": metaNow(),
			"message": "api error InvalidParameterCombination: Cannot delete protected DB Instance, please disable deletion protection and try again."}}}))
	must(env.OperatorWrites(ctx, cloud, ns, "billing", map[string]any{"state": "DELETING",
		"error": map[string]any{"code": 403, "message": "googleapi: Error 403: The client is not authorized to make this request., notAuthorized"}}))
	writing, stop := context.WithCancel(ctx)
	defer stop()
	go env.KeepWriting(writing, velero, ns, "nightly", 3*time.Second, restoring)
	settle(t, deleted)

	want := map[string]struct {
		resource  string
		code      int
		severity  string
		summary   string
		finalizer string // whose adding managedFields records
	}{
		"orders-db":    {"dbinstances", 2, "critical", "it reports ACK.Terminal=True: api error InvalidParameterCombination: Cannot delete protected DB Instance", rds.Finalizer},
		"nightly":      {"restores", 0, "info", "progressing: field manager velero-server wrote its status", velero.Finalizer},
		"last-week":    {"restores", 2, "warning", "looks healthy but has not removed it, nor written to the object since its deletion began", velero.Finalizer},
		"billing":      {"instances", 2, "critical", "it reports status.error.message: googleapi: Error 403", cloud.Finalizer},
		"from-nightly": {"restores", 2, "critical", "depends on backupstoragelocation.velero.io/default (spec.backupName -> backup.velero.io/nightly-0300 -> spec.storageLocation), which reports status.message: BackupStorageLocation \"default\" is unavailable", velero.Finalizer},
		"from-deleted": {"restores", 2, "warning", "may wait for backup.velero.io/deleted-0300 (spec.backupName), which does not exist", velero.Finalizer},
	}
	for name, w := range want {
		r, res := diagnose(t, "why", w.resource+"/"+name, "-n", ns)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != w.code || top.Code != "FinalizerPending" || top.Severity != w.severity || !strings.Contains(top.Summary, w.summary) {
			t.Errorf("%s: exit %d, %s %s: %s; want exit %d, FinalizerPending %s saying %q", name, res.code, top.Code, top.Severity, top.Summary, w.code, w.severity, w.summary)
		}
		expectEvidence(t, top, "managedFields: finalizer "+w.finalizer+" was added by field manager")
		if name == "last-week" && !strings.Contains(top.Remediation[0].Command, "-e velero-server") {
			t.Errorf("last-week: the finalizer's adder is not looked for: %q", top.Remediation[0].Command)
		}
		if name == "orders-db" {
			expectTerminalFact(t, top)
		}
	}
	// The controller's words, as a runbook selects them from the facts
	// (docs/runbooks.md): the condition's field, status and message, and the
	// backup storage location's words two references away.
	res := runbook(t, nil, "controller-says.sh", "dbinstances/orders-db", "-n", ns)
	if want := `"DBInstance/orders-db"  status.conditions[ACK.Terminal]  True  -  "api error InvalidParameterCombination: Cannot delete protected DB Instance, please disable deletion protection and try again."`; res.code != 2 || !strings.Contains(res.stdout, want+"\n") {
		t.Errorf("controller-says.sh orders-db: exit %d, stdout %q, stderr %q; want the line %s", res.code, res.stdout, res.stderr, want)
	}
	res = runbook(t, nil, "controller-says.sh", "restores/from-nightly", "-n", ns)
	if want := `"BackupStorageLocation/default"  status.message  -  -  "BackupStorageLocation \"default\" is unavailable: rpc error`; res.code != 2 || !strings.Contains(res.stdout, want) {
		t.Errorf("controller-says.sh from-nightly: exit %d, stdout %q, stderr %q; want %s", res.code, res.stdout, res.stderr, want)
	}
	// The namespace's scan reads the same verdicts from the objects' metadata
	// and, where a controller wrote since the deletion, their status.
	r, _ := diagnose(t, "why", "-n", ns)
	for _, it := range r.Items {
		w, ok := want[it.Object.Name]
		if !ok || strings.HasPrefix(it.Object.Name, "from-") {
			continue // a scan reads its metadata, not the spec that names its backup
		}
		delete(want, it.Object.Name)
		if top := it.Causes[0]; top.Severity != w.severity || !strings.Contains(top.Summary, w.summary) {
			t.Errorf("why -n: %s: %s: %s; want %s saying %q", it.Object.Name, top.Severity, top.Summary, w.severity, w.summary)
		}
	}
	delete(want, "from-nightly")
	if delete(want, "from-deleted"); len(want) > 0 {
		t.Errorf("why -n did not report %v", want)
	}
}

// expectTerminalFact checks that ACK's Terminal condition is evidence as
// data: its field, status, words and time.
func expectTerminalFact(t *testing.T, c cause) {
	t.Helper()
	for _, f := range c.Facts {
		if f.Field == "status.conditions[ACK.Terminal]" {
			if f.Object != nil || f.Value != "True" || !strings.HasPrefix(f.Quote, "api error InvalidParameterCombination") || f.At == nil || !slices.Contains(c.Evidence, f.Text) {
				t.Errorf("the ACK.Terminal fact: %+v", f)
			}
			return
		}
	}
	t.Errorf("no fact of status.conditions[ACK.Terminal] in %+v", c.Facts)
}

func metaNow() string { return time.Now().UTC().Format(time.RFC3339) }

// Issue 36: what holds an operator's object is named by the object: the
// node its status or spec names (a virtual machine's status.nodeName, a
// local volume's spec.ownerNodeID), and its own dependents being deleted
// (a virtual machine's launcher pod). Judged and nested without knowing
// the operator; a virtual machine shutting down inside its grace period is
// progressing.
func TestWhatAnOperatorsObjectNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "kubevirt")
	// KubeVirt: staging/src/kubevirt.io/api/core/v1/types.go
	// (VirtualMachineInstanceFinalizer, status.nodeName); its controller runs
	// in the kubevirt namespace.
	vmi := scenario.Operator{Group: "kubevirt.io", Kind: "VirtualMachineInstance", Plural: "virtualmachineinstances",
		Manager: "virt-controller", Finalizer: "kubevirt.io/foregroundDeleteVirtualMachine"}
	// OpenEBS LocalPV-LVM: pkg/lvm's LVMFinalizer, LVMVolume spec.ownerNodeID;
	// its node agent is a DaemonSet.
	lvm := scenario.Operator{Group: "local.openebs.io", Kind: "LVMVolume", Plural: "lvmvolumes",
		Manager: "lvm-driver", Finalizer: "lvm.openebs.io/finalizer"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []scenario.Operator{vmi, lvm} {
		must(env.StatusCRD(ctx, o))
	}
	must(env.Controller(ctx, ns, "virt-controller", liveNode))
	must(env.DaemonSetOn(ctx, ns, "openebs-lvm-node", liveNode))
	const dead = "vm-node-dead"
	must(env.DyingNode(ctx, dead))
	must(env.Adopt(ctx, vmi, ns, "db-vm", nil, map[string]any{"phase": "Running", "nodeName": dead}))
	must(env.OwnedPod(ctx, vmi, ns, "db-vm", "virt-launcher-db-vm-x7k2p", dead, 1, true))
	must(env.Adopt(ctx, vmi, ns, "web-vm", nil, map[string]any{"phase": "Running", "nodeName": liveNode}))
	must(env.OwnedPod(ctx, vmi, ns, "web-vm", "virt-launcher-web-vm-q9z4r", liveNode, 600, false))
	must(env.Adopt(ctx, lvm, ns, "pvc-0a1b", map[string]any{"ownerNodeID": "lvm-node-gone", "volGroup": "lvmvg", "capacity": "1073741824"}, map[string]any{"state": "Ready"}))
	must(env.WaitNodeUnreachable(ctx, dead))
	time.Sleep(1100 * time.Millisecond) // the writes to the second before the deletions
	deleted := time.Now()
	must(env.Delete(ctx, vmi, ns, "db-vm"))
	must(env.Delete(ctx, vmi, ns, "web-vm"))
	must(env.Delete(ctx, lvm, ns, "pvc-0a1b"))
	// virt-controller deletes the launcher pods of deleted instances.
	for _, pod := range []string{"virt-launcher-db-vm-x7k2p", "virt-launcher-web-vm-q9z4r"} {
		must(env.Client.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}))
	}
	settle(t, deleted)

	r, res := diagnose(t, "why", "virtualmachineinstances/db-vm", "-n", ns)
	it := only(t, r)
	if top := it.Causes[0]; res.code != 2 || top.Code != "NodeUnreachable" || top.Severity != "critical" ||
		!strings.Contains(top.Summary, "status.nodeName names node "+dead+", which stopped reporting") {
		t.Errorf("db-vm: exit %d, %v, top %s: %s", res.code, codesOf(it), top.Severity, top.Summary)
	}
	fp := causeOf(it, "FinalizerPending")
	if fp == nil || len(fp.BlockedBy) != 1 || fp.BlockedBy[0].Object.Name != "virt-launcher-db-vm-x7k2p" || codesOf(fp.BlockedBy[0])[0] != "NodeUnreachable" ||
		!strings.Contains(fp.Summary, "waits for the object's dependents, being deleted: pod/virt-launcher-db-vm-x7k2p is stuck: node "+dead+" stopped reporting") {
		t.Errorf("db-vm's finalizer cause: %+v", fp)
	}

	r, res = diagnose(t, "why", "lvmvolumes/pvc-0a1b", "-n", ns)
	it = only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "NodeNotFound" || top.Severity != "critical" ||
		!strings.Contains(top.Summary, "spec.ownerNodeID names node lvm-node-gone, which no longer exists") {
		t.Errorf("pvc-0a1b: exit %d, %v, top %s: %s", res.code, codesOf(it), top.Severity, top.Summary)
	}
	expectEvidence(t, top, "node lvm-node-gone: not found", "DaemonSet "+ns+"/openebs-lvm-node looks like the owner of lvm.openebs.io/finalizer")

	r, res = diagnose(t, "why", "virtualmachineinstances/web-vm", "-n", ns)
	it = only(t, r)
	if top := it.Causes[0]; res.code != 0 || it.Stuck || top.Severity != "info" || !strings.HasPrefix(top.Summary, "progressing: the object's 1 dependent being deleted is not stuck") {
		t.Errorf("web-vm: exit %d, stuck %t, %v, top %s: %s", res.code, it.Stuck, codesOf(it), top.Severity, top.Summary)
	}
}

// Issue 36, item 4: an object pinned to a live node whose controller is a
// node agent (a DaemonSet) is judged by the agent's pod on that node, not by
// the DaemonSet's ready count. TopoLVM (pkg/topolvm constants.go:
// LogicalVolumeFinalizer "topolvm.io/logicalvolume"; the cluster-scoped
// LogicalVolume's spec.nodeName; topolvm-node, a DaemonSet, removes it
// after the volume is gone from its node). Its agent is ready on the kwok
// node, crashing on one node, absent from another (a label it selects on
// missing): the DaemonSet reads 2 pods, 1 ready, and looks alive.
func TestANodeAgentIsJudgedOnTheObjectsNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "topolvm-system")
	lv := scenario.Operator{Group: "topolvm.io", Kind: "LogicalVolume", Plural: "logicalvolumes",
		Manager: "topolvm-node", Finalizer: "topolvm.io/logicalvolume", Cluster: true}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.StatusCRD(ctx, lv))
	const label, crashing, bare = "lab.kubectl-terminating.io/topolvm", "topolvm-crashing", "topolvm-bare"
	for _, n := range []string{crashing, bare} {
		stop, err := env.HandNode(ctx, n)
		must(err)
		t.Cleanup(stop)
	}
	for _, n := range []string{liveNode, crashing} {
		_, err := env.Client.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(`{"metadata":{"labels":{"`+label+`":"yes"}}}`), metav1.PatchOptions{})
		must(err)
	}
	must(env.NodeAgent(ctx, ns, "topolvm-node", label, []string{liveNode, crashing}, map[string]corev1.PodStatus{crashing: scenario.CrashLoop("topolvm-node", 9)}))
	volumes := map[string]string{"pvc-crashing": crashing, "pvc-bare": bare, "pvc-live": liveNode}
	for name, node := range volumes {
		must(env.Adopt(ctx, lv, "", name, map[string]any{"name": name, "nodeName": node, "deviceClass": "ssd", "size": "1Gi"},
			map[string]any{"volumeID": "0b3c" + name, "code": int64(0)}))
	}
	t.Cleanup(func() { // cluster-scoped: leave nothing stuck for the tests that list everything
		for name := range volumes {
			_, _ = env.Dynamic.Resource(schema.GroupVersionResource{Group: lv.Group, Version: "v1", Resource: lv.Plural}).
				Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	time.Sleep(1100 * time.Millisecond) // the writes to the second before the deletions
	deleted := time.Now()
	for name := range volumes {
		must(env.Delete(ctx, lv, "", name))
	}
	settle(t, deleted)

	agentPod := func(node string) string {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		must(err)
		if len(pods.Items) != 1 {
			t.Fatalf("%d agent pods on %s", len(pods.Items), node)
		}
		return pods.Items[0].Name
	}
	for _, tc := range []struct{ volume, summary, command string }{
		{"pvc-crashing", "the node agent that removes topolvm.io/logicalvolume on node " + crashing + " (spec.nodeName) cannot act: its pod " + ns + "/" + agentPod(crashing) +
			" on node " + crashing + " is not ready: container topolvm-node waiting CrashLoopBackOff, restarted 9 times",
			"kubectl logs pod/" + agentPod(crashing) + " -n " + ns + " --all-containers --previous"},
		{"pvc-bare", "the node agent that removes topolvm.io/logicalvolume on node " + bare + " (spec.nodeName) cannot act: DaemonSet " + ns + "/topolvm-node runs no pod on node " + bare,
			"kubectl describe daemonset topolvm-node -n " + ns},
	} {
		r, res := diagnose(t, "why", "logicalvolumes/"+tc.volume)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != "FinalizerPending" || top.Severity != "critical" || !strings.Contains(top.Summary, tc.summary) {
			t.Errorf("%s: exit %d, %v, top %s: %s", tc.volume, res.code, codesOf(it), top.Severity, top.Summary)
		}
		if !slices.ContainsFunc(top.Remediation, func(s struct{ ID, Action, Command, Risk, RiskLevel string }) bool { return s.Command == tc.command }) {
			t.Errorf("%s: no step runs %q", tc.volume, tc.command)
		}
	}
	// The control: its agent ready on its node, the controller looks healthy as before.
	r, res := diagnose(t, "why", "logicalvolumes/pvc-live")
	top := only(t, r).Causes[0]
	if res.code != 2 || strings.Contains(top.Summary, "node agent") || !strings.Contains(top.Summary, "looks healthy") {
		t.Errorf("pvc-live: exit %d, %s: %s", res.code, top.Severity, top.Summary)
	}
	expectEvidence(t, top, "node agent of topolvm.io/logicalvolume on node "+liveNode+" (spec.nodeName): DaemonSet "+ns+"/topolvm-node's pod "+agentPod(liveNode)+" runs, ready")
}

// The acceptance run's Cluster API case: a cluster being deleted waits for
// its infrastructure cluster, which its provider leaves alone while it is
// paused. Cluster API: cluster.cluster.x-k8s.io (the Cluster controller,
// capi-controller-manager, field manager "manager"), spec.infrastructureRef;
// CAPA: awscluster.infrastructure.cluster.x-k8s.io. The pause is one hop
// away from the object asked about; the unpaused pair is the control.
func TestAPausedObjectOneHopAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "capi-demo")
	clusters := scenario.Operator{Group: "cluster.x-k8s.io", Kind: "Cluster", Plural: "clusters", Manager: "manager", Finalizer: "cluster.cluster.x-k8s.io"}
	infra := scenario.Operator{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSCluster", Plural: "awsclusters", Manager: "manager", Finalizer: "awscluster.infrastructure.cluster.x-k8s.io"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []scenario.Operator{clusters, infra} {
		must(env.StatusCRD(ctx, o))
	}
	must(env.Controller(ctx, ns, "capi-controller-manager", liveNode))
	// CAPA's controller shares no word with its finalizer: it is found by
	// what its role lets it write (config/rbac: the manager-role, bound to
	// its service account).
	must(env.ControllerAs(ctx, ns, "capa-controller-manager", liveNode, "capa-controller-manager"))
	_, err := env.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "capa-manager-role-" + ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"awsclusters"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}}, metav1.CreateOptions{})
	must(err)
	_, err = env.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "capa-manager-rolebinding-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "capa-manager-role-" + ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "capa-controller-manager"}}}, metav1.CreateOptions{})
	must(err)
	for _, name := range []string{"prod", "dev"} {
		must(env.Adopt(ctx, infra, ns, name, map[string]any{"region": "eu-west-1"}, map[string]any{"ready": true}))
		must(env.Adopt(ctx, clusters, ns, name, map[string]any{"infrastructureRef": map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1", "kind": "AWSCluster", "name": name, "namespace": ns}}, map[string]any{"phase": "Provisioned"}))
	}
	// Paused by a person (clusterctl move does the same) before the deletion.
	_, err = env.Dynamic.Resource(schema.GroupVersionResource{Group: infra.Group, Version: "v1", Resource: infra.Plural}).Namespace(ns).
		Patch(ctx, "prod", types.MergePatchType, []byte(`{"metadata":{"annotations":{"cluster.x-k8s.io/paused":""}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"})
	must(err)
	time.Sleep(1100 * time.Millisecond)
	deleted := time.Now()
	for _, name := range []string{"prod", "dev"} {
		must(env.Delete(ctx, clusters, ns, name))
		must(env.Delete(ctx, infra, ns, name))
	}
	settle(t, deleted)

	r, res := diagnose(t, "why", "clusters.cluster.x-k8s.io/prod", "-n", ns)
	top := only(t, r).Causes[0]
	want := "depends on awscluster.infrastructure.cluster.x-k8s.io/prod (spec.infrastructureRef), which is paused (metadata.annotations[cluster.x-k8s.io/paused]): its controller leaves it alone, its deletion included"
	if res.code != 2 || top.Code != "FinalizerPending" || top.Severity != "critical" || !strings.Contains(top.Summary, want) {
		t.Errorf("prod: exit %d, %s %s: %s", res.code, top.Code, top.Severity, top.Summary)
	}
	unpause := "kubectl annotate awsclusters.infrastructure.cluster.x-k8s.io prod cluster.x-k8s.io/paused- -n " + ns
	if !slices.ContainsFunc(top.Remediation, func(s struct{ ID, Action, Command, Risk, RiskLevel string }) bool {
		return s.ID == "unpause-dependency" && s.Command == unpause
	}) {
		t.Errorf("prod: no step runs %q: %+v", unpause, top.Remediation)
	}
	// The infrastructure cluster itself: paused, its controller found by its
	// grant; not "still named" by the cluster that waits for it.
	r, _ = diagnose(t, "why", "awsclusters/prod", "-n", ns)
	if top := only(t, r).Causes[0]; !strings.Contains(top.Summary, "the controller that removes awscluster.infrastructure.cluster.x-k8s.io looks healthy, but the object is paused") ||
		!hasEvidence(top, "deployment "+ns+"/capa-controller-manager: 1/1 ready (its service account capa-controller-manager may update awsclusters.infrastructure.cluster.x-k8s.io: clusterrole capa-manager-role-"+ns) {
		t.Errorf("awscluster prod: %s %v", top.Summary, top.Evidence)
	}
	r, _ = diagnose(t, "why", "clusters.cluster.x-k8s.io/dev", "-n", ns)
	if top := only(t, r).Causes[0]; strings.Contains(top.Summary, "paused") {
		t.Errorf("dev (nothing paused): %s", top.Summary)
	}
	r, _ = diagnose(t, "why", "awsclusters/dev", "-n", ns)
	if top := only(t, r).Causes[0]; strings.Contains(top.Summary, "still names") || !strings.Contains(top.Summary, "looks healthy but has not removed it") {
		t.Errorf("awscluster dev, named only by the cluster being deleted, its controller found by its grant: %s", top.Summary)
	}
}

// The acceptance run's CSI case: a released volume whose driver was
// uninstalled with its namespace (no CSIDriver, no external-provisioner
// lease anywhere) waits forever, as does one whose provisioner stopped
// renewing its leader lease (external-provisioner's lockName: the driver's
// name, sanitized); a provisioner that renews it runs (the control).
func TestVolumeWhoseProvisionerIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "csi-provisioners")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.InstalledCSIDriver(ctx, "stale.csi.lab.example", ns, time.Now().Add(-10*time.Minute)))
	must(env.InstalledCSIDriver(ctx, "live.csi.lab.example", ns, time.Now()))
	volumes := map[string]string{"pv-driver-gone": "gone.csi.lab.example", "pv-provisioner-stale": "stale.csi.lab.example", "pv-provisioner-live": "live.csi.lab.example"}
	deleted := time.Now()
	for pv, driver := range volumes {
		_, err := env.ReleasedCSIVolume(ctx, pv, driver)
		must(err)
		t.Cleanup(func() { env.ReleaseVolume(context.Background(), pv) })
	}
	_, err := env.CSIVolume(ctx, "pv-driver-gone-next", "gone.csi.lab.example") // not deleted yet
	must(err)
	t.Cleanup(func() { env.ReleaseVolume(context.Background(), "pv-driver-gone-next") })
	settle(t, deleted)
	r, res := diagnose(t, "preflight", "pv/pv-driver-gone-next")
	if fc := only(t, r); res.code != 2 || codesOf(fc)[0] != "VolumeDeleteFailed" || fc.Causes[0].Severity != "critical" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: no CSI external-provisioner of driver gone.csi.lab.example acts on it") {
		t.Errorf("preflight, driver gone: exit %d %+v", res.code, fc.Causes)
	}
	for _, tc := range []struct{ pv, severity, summary, evidence string }{
		{"pv-driver-gone", "critical", "no CSI external-provisioner of driver gone.csi.lab.example acts on it: driver gone.csi.lab.example looks uninstalled (no CSIDriver gone.csi.lab.example, and no leader lease of its external-provisioner in any namespace)",
			"csidriver gone.csi.lab.example: not found"},
		{"pv-provisioner-stale", "critical", "the external-provisioner of driver stale.csi.lab.example is not running (its leader lease is not renewed)",
			"lease " + ns + "/stale-csi-lab-example: holder \"csi-controller-0\", renewed 10m"},
		{"pv-provisioner-live", "warning", "the external-provisioner of driver live.csi.lab.example runs (its leader lease is renewed)", "lease " + ns + "/live-csi-lab-example"},
	} {
		r, res := diagnose(t, "why", "pv/"+tc.pv)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != "VolumeDeleteFailed" || top.Severity != tc.severity || !strings.Contains(top.Summary, tc.summary) {
			t.Errorf("%s: exit %d, %s %s: %s", tc.pv, res.code, top.Code, top.Severity, top.Summary)
		}
		expectEvidence(t, top, tc.evidence)
	}
}

func causeOf(it item, code string) *cause {
	for i := range it.Causes {
		if it.Causes[i].Code == code {
			return &it.Causes[i]
		}
	}
	return nil
}

// Issue 36: what still names a held object, found among its kin without a
// catalogue row: Argo Events' EventBus (its controller's finalizer
// eventbus-controller, controllers/eventbus: finalizerName = ControllerName)
// named by an EventSource's spec.eventBusName. The controller runs as
// controller-manager, which shares no word with its finalizer: what names
// the bus is the answer, not "no controller found".
func TestWhatStillNamesAnOperatorsObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "argo-events")
	bus := scenario.Operator{Group: "argoproj.io", Kind: "EventBus", Plural: "eventbus", Manager: "argo-events", Finalizer: "eventbus-controller"}
	sources := scenario.Operator{Group: "argoproj.io", Kind: "EventSource", Plural: "eventsources", Manager: "argo-events"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []scenario.Operator{bus, sources} {
		must(env.StatusCRD(ctx, o))
	}
	must(env.Controller(ctx, ns, "controller-manager", liveNode))
	must(env.Adopt(ctx, bus, ns, "default", map[string]any{"jetstream": map[string]any{"version": "latest"}}, map[string]any{"phase": "Running"}))
	must(env.Adopt(ctx, bus, ns, "spare", map[string]any{"jetstream": map[string]any{"version": "latest"}}, map[string]any{"phase": "Running"}))
	must(env.Adopt(ctx, sources, ns, "webhook", map[string]any{"eventBusName": "default", "webhook": map[string]any{"push": map[string]any{"port": "12000"}}}, map[string]any{}))
	time.Sleep(1100 * time.Millisecond)
	deleted := time.Now()
	must(env.Delete(ctx, bus, ns, "default"))
	must(env.Delete(ctx, bus, ns, "spare"))
	settle(t, deleted)

	r, res := diagnose(t, "why", "eventbus/default", "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "FinalizerPending" || top.Severity != "critical" ||
		!strings.Contains(top.Summary, "may wait for the 1 object that still names the object: eventsource.argoproj.io/webhook (spec.eventBusName)") {
		t.Errorf("default: exit %d, %s %s: %s", res.code, top.Code, top.Severity, top.Summary)
	}
	expectEvidence(t, top, "named by eventsource.argoproj.io/webhook -n "+ns+": spec.eventBusName: default (not being deleted)")
	// The control: a bus nothing names is reported as before.
	r, _ = diagnose(t, "why", "eventbus/spare", "-n", ns)
	if top := only(t, r).Causes[0]; strings.Contains(top.Summary, "still names") || hasEvidence(top, "named by") {
		t.Errorf("spare: %s %v", top.Summary, top.Evidence)
	}
}

// Issue 36: an operator's words on an object its namespace's deletion is
// waiting for are read as when the object is named: the namespace's scan
// reads the few objects each finalizer holds in full. Here the words were
// written before any deletion (a controller that keeps failing need not
// write again), which managedFields alone would not have led to.
func TestANamespacesHeldObjectsSpeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "held-words")
	db := scenario.Operator{Group: "db.heldwords.e2e.example.com", Kind: "Cluster", Plural: "clusters",
		Manager: "db-operator", Finalizer: "db.heldwords.e2e.example.com/cleanup"}
	words := "deletion blocked: backup of volume data-0 failed: AccessDenied: s3:PutObject"
	adopted(t, db, ns, "orders", map[string]any{"conditions": []any{
		map[string]any{"type": "Stalled", "status": "True", "reason": "BackupFailed", "message": words, "lastTransitionTime": metaNow()}}})
	time.Sleep(1100 * time.Millisecond) // the words before the deletion, to the second
	deleted := time.Now()
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, deleted)
	r, res := diagnose(t, "why", "ns/"+ns)
	it := only(t, r)
	var held *item
	for _, c := range it.Causes {
		for i := range c.BlockedBy {
			if c.BlockedBy[i].Object.Name == "orders" {
				held = &c.BlockedBy[i]
			}
		}
	}
	if res.code != 2 || held == nil || len(held.Causes) == 0 {
		t.Fatalf("exit %d, the held cluster not nested: %+v", res.code, it.Causes)
	}
	top := held.Causes[0]
	if !strings.Contains(top.Summary+strings.Join(top.Evidence, "\n"), words) {
		t.Errorf("the held cluster's words are not read: %s: %s\n%v", top.Code, top.Summary, top.Evidence)
	}
}

// adopted makes an operator's CRD and one object of it in ns with that
// status, held by its finalizer, which is released when the test ends.
func adopted(t *testing.T, op scenario.Operator, ns, name string, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	if err := env.StatusCRD(ctx, op); err != nil {
		t.Fatal(err)
	}
	if err := env.Adopt(ctx, op, ns, name, nil, status); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release(env.Dynamic.Resource(schema.GroupVersionResource{Group: op.Group, Version: "v1", Resource: op.Plural}).Namespace(ns), name)
	})
}

// An operator that runs one controller per finalizer (Config Connector: a
// deletion defender beside its controller manager): each finalizer is
// judged by its own controller. With the defender down and the manager
// healthy, preflight says the deletion would stick on the defender's
// finalizer, and why agrees after the delete.
func TestEachFinalizerItsOwnController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	system, team := namespace(t, "kcc-cnrm-system"), namespace(t, "kcc-team-a")
	const group, defender = "storage.cnrm.cloud.google.com", "cnrm.cloud.google.com/deletion-defender"
	if err := env.CRD(ctx, group, "StorageBucket", "storagebuckets"); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, system, "cnrm-controller-manager", liveNode); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, system, "cnrm-deletiondefender", ""); err != nil { // no ready replica
		t.Fatal(err)
	}
	if err := env.CustomResource(ctx, group, "StorageBucket", "storagebuckets", team, "b1", "cnrm.cloud.google.com/finalizer", defender); err != nil {
		t.Fatal(err)
	}
	r, res := diagnose(t, "preflight", "storagebuckets."+group+"/b1", "-n", team)
	if fc := only(t, r); res.code != 2 || fc.Severity != "critical" || !slices.ContainsFunc(fc.Causes, func(c cause) bool {
		return strings.Contains(c.Summary, "finalizer "+defender+", and its controller has no ready replica")
	}) {
		t.Errorf("preflight: exit %d %+v", res.code, fc.Causes)
	}
	if err := env.DeleteCustomResource(ctx, group, "storagebuckets", team, "b1"); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	r, res = diagnose(t, "why", "storagebuckets."+group+"/b1", "-n", team)
	if it := only(t, r); res.code != 2 || it.Causes[0].Severity != "critical" ||
		it.Causes[0].Summary != "the controller that removes "+defender+" has no ready replica: nothing removes the finalizer" {
		t.Errorf("why after the delete: exit %d %+v", res.code, it.Causes)
	}
	t.Cleanup(func() {
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "storagebuckets"}
		_, _ = env.Dynamic.Resource(gvr).Namespace(team).Patch(context.Background(), "b1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}
