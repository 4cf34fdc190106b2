package collect

import (
	"fmt"
	"strings"
)

// Permission is one read the plugin makes, as docs/rbac.md's table says it:
// what it reads (verb and resource), what for, and what a report says
// without it. Each source declares its own (source.permissions); the reads
// of the targets themselves are declared here; the generated table
// (make generate) is checked against docs/rbac.md by pkg/cmd's tests.
type Permission struct {
	Read, UsedFor, Without string
}

// targetPermissions are the reads that find and read the targets
// (discovery, the scans, the objects named or found).
var targetPermissions = []Permission{
	{Read: "discovery (`/api`, `/apis`)", UsedFor: "resolving `TYPE/NAME`, listing every type", Without: "the plugin cannot work (exit 1)"},
	{Read: "`list` on every resource type in scope (metadata only)", UsedFor: "`list`, `why` without arguments", Without: "that type is listed under `skipped`; if no type at all can be listed, exit 1"},
	{Read: "`get` on the named object", UsedFor: "`why TYPE/NAME`, `wait TYPE/NAME`, `preflight TYPE/NAME`", Without: "exit 1 (Forbidden)"},
	{Read: "`get` on an object a scan found held by a third-party finalizer, when a controller wrote it since its deletion began (`list` of its type in full, in its namespace or every namespace, when more than 8 of a type need it and they are at least a quarter of the objects the scan counted)", UsedFor: "its status (conditions, error fields), so \"progressing\" is never said over a failure it reports", Without: "the object is judged from its metadata (who wrote it when); `skipped` says so"},
	{Read: "`get` pods (`list` pods in a namespace where many are terminating)", UsedFor: "the full pod (a scan reads metadata only)", Without: "the pod is diagnosed from its metadata; `skipped` says so"},
	{Read: "`get` namespaces (`list` when more than 8)", UsedFor: "the namespace controller's conditions; namespace labels for webhook namespaceSelectors", Without: "the namespace is diagnosed from its metadata; webhooks are assumed to match"},
	{Read: "`get` persistentvolumes, services, volumeattachments; `list` volumeattachments", UsedFor: "`PVBound`, `VolumeDeleteFailed`, `VolumeDetachFailed`, `LoadBalancerCleanupPending`", Without: "the generic `FinalizerPending`"},
}

// healthPermissions are pkg/kube's reads of the apiserver's health, when a
// run stalls or fails.
var healthPermissions = []Permission{
	{Read: "`get` on the URLs `/readyz` and `/livez` (`?verbose`), only when a request stalls 5 s or a run fails with a timeout or a 5xx", UsedFor: "the apiserver's own word on why reads hang (`[-]etcd failed`), in the error line", Without: "everyone has it: the default ClusterRole `system:public-info-viewer` is bound to `system:authenticated` and `system:unauthenticated`; without it the error line says its `/readyz` could not be read"},
}

// Permissions are every read of a run, in the order a run makes them: the
// targets', the command's own (commands), each source's in the order of its
// stage, and the health probe's.
func Permissions(commands ...Permission) []Permission {
	ordered, err := stages(sources)
	if err != nil {
		panic("collect: " + err.Error()) // a programming error, caught by TestSourcesFormStages
	}
	out := append(append([]Permission{}, targetPermissions...), commands...)
	for _, stage := range ordered {
		for _, s := range stage {
			out = append(out, s.permissions...)
		}
	}
	return append(out, healthPermissions...)
}

// PermissionsTable is the Markdown table of permissions.
func PermissionsTable(permissions []Permission) string {
	var b strings.Builder
	b.WriteString("| read | used for | without it |\n|---|---|---|\n")
	for _, p := range permissions {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", p.Read, p.UsedFor, p.Without)
	}
	return b.String()
}
