package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/version"
)

// selection is what this run was asked to diagnose.
func (o *Options) selection() snapfile.Selection {
	return snapfile.Selection{
		Command:       o.command,
		Args:          o.args,
		Namespace:     o.namespace,
		AllNamespaces: o.AllNamespaces,
		LabelSelector: o.LabelSelector,
		FieldSelector: o.FieldSelector,
		Kinds:         o.Kinds,
	}
}

func (o *Options) addReplayFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.Replay, "snapshot", "", "Diagnose from a --save-snapshot file, not the cluster (nothing dialled); any arguments, -n, -A, -l, --kind must be the saved run's.")
	o.ReplayMaxSize.Quantity = *resource.NewQuantity(snapfile.DefaultMaxBytes, resource.BinarySI)
	cmd.Flags().Var(&o.ReplayMaxSize, "snapshot-max-size", "The largest snapshot --snapshot reads, compressed or not (e.g. 256Mi): a stranger's file cannot take the machine's memory.")
}

// save writes the run's evidence to --save-snapshot's file, if asked.
func (o *Options) save(snap *observed.Snapshot) error {
	if o.SaveSnapshot == "" {
		return nil
	}
	err := snapfile.Save(o.SaveSnapshot, snapfile.Saved{PluginVersion: version.String(), Context: o.contextName(), Selection: o.selection(), Snapshot: snap})
	if err != nil {
		return fmt.Errorf("saving the snapshot: %w", err)
	}
	return nil
}

// replay loads --snapshot's file and takes the saved run's selection: a
// replay can only show what the saved run read, so a selection given on the
// command line must be the saved one.
func (o *Options) replay(ctx context.Context) (*observed.Snapshot, error) {
	if o.ReplayMaxSize.Value() <= 0 {
		return nil, fmt.Errorf("--snapshot-max-size must be positive, got %s", o.ReplayMaxSize.String())
	}
	saved, err := snapfile.LoadLimited(ctx, o.Replay, snapfile.Limits{MaxBytes: o.ReplayMaxSize.Value()})
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	sel := saved.Selection
	var differs []string
	same := func(flag string, given bool, equal bool) {
		if given && !equal {
			differs = append(differs, flag)
		}
	}
	same("arguments", len(o.args) > 0, slices.Equal(o.args, sel.Args))
	same("-n", o.ConfigFlags.Namespace != nil && *o.ConfigFlags.Namespace != "", o.ConfigFlags.Namespace != nil && *o.ConfigFlags.Namespace == sel.Namespace)
	same("-A", o.AllNamespaces, sel.AllNamespaces)
	same("-l", o.LabelSelector != "", o.LabelSelector == sel.LabelSelector)
	same("--field-selector", o.FieldSelector != "", o.FieldSelector == sel.FieldSelector)
	same("--kind", len(o.Kinds) > 0, slices.Equal(o.Kinds, sel.Kinds))
	if len(differs) > 0 {
		return nil, fmt.Errorf("the snapshot holds what `%s` read; its %s differ (give the same or none)", report.Safe(savedCommand(sel)), strings.Join(differs, ", "))
	}
	o.args, o.namespace, o.AllNamespaces = sel.Args, sel.Namespace, sel.AllNamespaces
	o.LabelSelector, o.FieldSelector, o.Kinds = sel.LabelSelector, sel.FieldSelector, sel.Kinds
	o.replayed = &report.Replay{TakenAt: metav1.NewTime(saved.Snapshot.Now), Context: saved.Context, PluginVersion: saved.PluginVersion}
	fmt.Fprintln(o.ErrOut, o.replayBanner(o.replayed))
	return saved.Snapshot, nil
}

// contextName is the kubeconfig context a run reads through: --context, or
// the current one ("" if none).
func (o *Options) contextName() string {
	raw, _ := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig() // unread: --context or ""
	name, _ := o.contextChoice(raw)
	return name
}

// replayBanner tells, on stderr, that a report is a replay: of when, which
// context, by which plugin, so that an old snapshot, or a stranger's, is
// not read as the cluster now. The file's labels are escaped.
func (o *Options) replayBanner(r *report.Replay) string {
	taken := "at a time not recorded"
	if !r.TakenAt.IsZero() {
		taken = r.TakenAt.UTC().Format(time.RFC3339)
		if age := o.now().Sub(r.TakenAt.Time); age >= 0 {
			taken += " (" + report.HumanDuration(age) + " ago)"
		}
	}
	context := "context not recorded"
	if r.Context != "" {
		context = fmt.Sprintf("context %q", r.Context)
	}
	plugin := "plugin version not recorded"
	if r.PluginVersion != "" {
		plugin = "plugin " + r.PluginVersion
	}
	return report.Safe(fmt.Sprintf("replaying a snapshot taken %s, %s, %s: not the cluster now", taken, context, plugin))
}

// savedCommand is the saved run's command line, for messages.
func savedCommand(sel snapfile.Selection) string {
	parts := append([]string{"kubectl terminating", sel.Command}, sel.Args...)
	switch {
	case sel.AllNamespaces:
		parts = append(parts, "-A")
	case sel.Namespace != "":
		parts = append(parts, "-n", sel.Namespace)
	}
	if sel.LabelSelector != "" {
		parts = append(parts, "-l", sel.LabelSelector)
	}
	if sel.FieldSelector != "" {
		parts = append(parts, "--field-selector", sel.FieldSelector)
	}
	if len(sel.Kinds) > 0 {
		parts = append(parts, "--kind", strings.Join(sel.Kinds, ","))
	}
	return strings.Join(parts, " ")
}
