package observed

import (
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MaxDepth bounds how deep targets nest (a namespace's pod, an owner's
// dependent and its own dependents...): the collector follows chains no
// deeper, the diagnosis nests no deeper, and a snapshot file nesting deeper
// is refused. Deployment -> ReplicaSet -> Pod is 2.
const MaxDepth = 8

// Children lists the targets nested in t, which a diagnosis of t may nest:
// a namespace's pods and held examples (by finalizer), an owner's
// dependents, a claim's pods, an object's referrers.
func (t *Target) Children() []*Target {
	var out []*Target
	if c := t.Contents; c != nil {
		out = append(out, c.Pods...)
		out = append(out, c.Live...)
		finalizers := make([]string, 0, len(c.Held))
		for f := range c.Held {
			finalizers = append(finalizers, f)
		}
		sort.Strings(finalizers)
		for _, f := range finalizers {
			out = append(out, c.Held[f]...)
		}
	}
	out = append(out, t.Dependents...)
	out = append(out, t.ClaimUsers...)
	out = append(out, t.Referrers...)
	out = append(out, t.Named...)
	return append(out, t.NamedBy...)
}

// BlocksOwnerDeletion reports whether t's reference to owner has
// blockOwnerDeletion: an owner deleted in the foreground waits for t.
func (t *Target) BlocksOwnerDeletion(owner types.UID) bool {
	return slices.ContainsFunc(t.Object.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
		return r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
	})
}

// CheckGraph proves the targets can be walked safely: no target nests itself
// (directly or not), none nests deeper than MaxDepth, and unfolding every
// shared target where it is nested (as a report does) yields at most
// maxUnfolded objects. A live run builds such a graph by construction; a
// snapshot file from elsewhere is checked before anything walks it.
func (s *Snapshot) CheckGraph(maxUnfolded int) error {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[*Target]int{}
	unfolded := map[*Target]int{} // the size of a target's tree, capped at maxUnfolded+1
	height := map[*Target]int{}   // how deep its tree goes below it
	var visit func(t *Target, depth int) error
	visit = func(t *Target, depth int) error {
		if t == nil {
			return fmt.Errorf("a nested target is missing")
		}
		switch state[t] {
		case onPath:
			return fmt.Errorf("target %s/%s nests itself", t.Ref.Resource, t.Ref.Name)
		case done:
			if depth+height[t] > MaxDepth {
				return fmt.Errorf("targets nest deeper than %d levels", MaxDepth)
			}
			return nil
		}
		if depth > MaxDepth {
			return fmt.Errorf("targets nest deeper than %d levels", MaxDepth)
		}
		state[t] = onPath
		size, h := 1, 0
		for _, c := range t.Children() {
			if err := visit(c, depth+1); err != nil {
				return err
			}
			size = min(size+unfolded[c], maxUnfolded+1)
			h = max(h, height[c]+1)
		}
		state[t], unfolded[t], height[t] = done, size, h
		return nil
	}
	total := 0
	for _, t := range s.Targets {
		if err := visit(t, 0); err != nil {
			return err
		}
		if total = min(total+unfolded[t], maxUnfolded+1); total > maxUnfolded {
			return fmt.Errorf("its targets unfold into more than %d nested objects", maxUnfolded)
		}
	}
	return nil
}

// AttacherLeaseName is the leader-election Lease of a CSI driver's
// external-attacher: external-attacher-leader-<driver> (csi-lib-utils'
// leaderelection sanitizes it, as external-attacher's SanitizeDriverName
// does for its finalizer).
func AttacherLeaseName(driver string) string {
	return leaderLeaseName("external-attacher-leader-" + driver)
}

// ProvisionerLeaseName is the leader-election Lease of a CSI driver's
// external-provisioner: the driver's own name (its lockName, '/' made '-',
// kept from sig-storage-lib-external-provisioner), sanitized the same way.
func ProvisionerLeaseName(driver string) string {
	return leaderLeaseName(driver)
}

// leaderLeaseName is csi-lib-utils' sanitizeName: every character but
// letters, digits and '-' made '-', and an 'X' after a final '-'.
func leaderLeaseName(lock string) string {
	name := []byte(lock)
	for i, b := range name {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-') {
			name[i] = '-'
		}
	}
	if len(name) == 0 || name[len(name)-1] == '-' {
		name = append(name, 'X')
	}
	return string(name)
}
