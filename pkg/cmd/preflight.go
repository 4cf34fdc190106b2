package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// preflightCommand is the command that forecasts deletions instead of
// explaining them.
const preflightCommand = "preflight"

// preflightOptions are preflight's own flags.
type preflightOptions struct {
	// Cascade is the propagation policy the deletion forecast would use.
	Cascade cascade
}

func newPreflightCommand(o *Options) *cobra.Command {
	p := &preflightOptions{}
	o.forecast = p
	cmd := &cobra.Command{
		Use:   "preflight TYPE/NAME ... | TYPE [NAME ...]",
		Short: "Say what would hold a deletion, before anyone deletes (read-only)",
		Long: `Forecast what would hold the deletion of the objects named (or of every object of a type, in
the namespace, with -A or -l), were it to begin now: the same mechanisms and cause codes as why,
marked as forecasts. Nothing is deleted.

Exit status: 0 nothing found that would hold it, 2 the deletion would stick (a critical cause) or may
(a warning: a suspect webhook, a failure its controller reports now), or would leave objects whose
deletion would (an operator uninstalled before its custom resources), 1 could not tell.`,
		Example: `  # Tear down a preview environment only if nothing would hold it
  kubectl terminating preflight ns/preview-123 && kubectl delete ns preview-123 --wait=false &&
    kubectl terminating wait ns/preview-123

  # Would deleting this CRD stick on instances whose operator is gone?
  kubectl terminating preflight crd/widgets.example.com -o json

  # Every preview namespace, before the nightly cleanup deletes them
  kubectl terminating preflight namespaces -l env=preview

  # Would a foreground deletion wait forever on a dependent (a ReplicaSet's pod on a dead node)?
  kubectl terminating preflight deploy/web --cascade=foreground`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args, func(r report.Report, st report.Style) error { return report.WriteWhy(o.Out, r, st) })
		},
	}
	o.addScopeFlags(cmd)
	o.addAllowPartialFlag(cmd)
	o.addTimeoutFlag(cmd)
	o.addFullScanFlag(cmd) // for a namespace already being deleted, diagnosed as why does
	cmd.Flags().Var(&p.Cascade, "cascade", "The propagation policy the deletion would use, as kubectl delete's: "+strings.Join(cascades, ", ")+" (waits for the dependents with blockOwnerDeletion, forecast in turn).")
	o.addOutputFlags(cmd)
	o.registerCompletions(cmd)
	return cmd
}

// preflight: the run forecasts deletions (kubectl terminating preflight).
func (o *Options) preflight() bool { return o.command == preflightCommand }

// cascade is the propagation policy a preflight forecasts ("" otherwise:
// the apiserver's default).
func (o *Options) cascade() metav1.DeletionPropagation {
	if o.forecast == nil {
		return ""
	}
	return metav1.DeletionPropagation(o.forecast.Cascade)
}

// cascades are kubectl delete's --cascade values, the default first.
var cascades = []string{"background", "foreground", "orphan"}

// cascade is --cascade: the propagation policy a forecast deletion is sent
// with ("" until set: the apiserver's default, Background).
type cascade metav1.DeletionPropagation

func (c *cascade) String() string {
	if *c == "" {
		return cascades[0]
	}
	return strings.ToLower(string(*c))
}

func (c *cascade) Set(v string) error {
	if !slices.Contains(cascades, v) {
		return fmt.Errorf("must be one of %s", strings.Join(cascades, ", "))
	}
	*c = cascade(strings.ToUpper(v[:1]) + v[1:]) // metav1.DeletePropagationBackground...
	return nil
}

func (c *cascade) Type() string { return "string" }
