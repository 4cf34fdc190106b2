package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "kubelets", after: nesting, read: (*Collector).readKubelets,
		permissions: []Permission{
			{Read: "`get` on `nodes/proxy`, only with `--kubelet`", UsedFor: "the kubelet's own `/pods` and `/stats/summary` for the nodes of stuck pods: containers, volumes and cgroup as the node sees them", Without: "`skipped: nodes/NODE/proxy/pods` (Forbidden), the rows stay as without `--kubelet`"},
		}})
}

const (
	// kubeletTimeout bounds each node's reads: a kubelet that hangs costs
	// the run this much, not its whole budget.
	kubeletTimeout = 5 * time.Second
	// kubeletConcurrency is how many nodes are read at once: every read goes
	// through the apiserver, which opens a connection to the kubelet.
	kubeletConcurrency = 8
)

// readKubelets reads, when asked (--kubelet), what the kubelet of each node
// holding a pod target reports of those pods: /pods and /stats/summary
// through the apiserver's node proxy, one request each per node.
func (c *Collector) readKubelets(ctx context.Context, s *observed.Snapshot) {
	if !c.Kubelet {
		return
	}
	podsByNode, names := c.targetsByNode(s, true)
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" }) // unscheduled: no kubelet
	views := make([]*observed.Kubelet, len(names))
	bounded(kubeletConcurrency, len(names), func(i int) {
		views[i] = c.readKubelet(ctx, names[i], podsByNode[names[i]])
	})
	s.Kubelets = map[string]*observed.Kubelet{}
	for i, node := range names {
		if views[i] != nil {
			s.Kubelets[node] = views[i]
		}
	}
}

// readKubelet reads one node's kubelet; a read that fails is a skip on each
// of the node's pods (nil when neither endpoint answered).
func (c *Collector) readKubelet(ctx context.Context, node string, pods []*observed.Target) *observed.Kubelet {
	ctx, cancel := context.WithTimeout(ctx, kubeletTimeout)
	defer cancel()
	v := &observed.Kubelet{ReadAt: c.Now(), Pods: map[types.UID]*observed.KubeletPod{}}
	wanted := map[types.UID]bool{}
	for _, t := range pods {
		wanted[t.Pod.UID] = true
	}
	entry := func(uid types.UID) *observed.KubeletPod {
		if v.Pods[uid] == nil {
			v.Pods[uid] = &observed.KubeletPod{}
		}
		return v.Pods[uid]
	}
	skip := func(path string, err error) {
		sk := kubeletSkip(fmt.Sprintf("nodes/%s/proxy/%s", node, path), err)
		for _, t := range pods {
			c.skipTarget(t, sk)
		}
	}

	var managed corev1.PodList
	if err := c.nodeProxy(ctx, node, "pods", &managed); err != nil {
		skip("pods", err)
	} else {
		v.PodsRead = true
		for _, p := range managed.Items {
			if wanted[p.UID] {
				k := entry(p.UID)
				k.Managed = true
				k.Containers = append(append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...),
					p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...)
			}
		}
	}
	var summary statsv1alpha1.Summary
	if err := c.nodeProxy(ctx, node, "stats/summary", &summary); err != nil {
		skip("stats/summary", err)
	} else {
		v.SummaryRead = true
		for _, p := range summary.Pods {
			uid := types.UID(p.PodRef.UID)
			if !wanted[uid] {
				continue
			}
			k := entry(uid)
			k.Cgroup = p.CPU != nil || p.Memory != nil
			for _, vol := range p.VolumeStats {
				kv := observed.KubeletVolume{Name: vol.Name}
				if vol.PVCRef != nil {
					kv.Claim = vol.PVCRef.Name
				}
				k.Volumes = append(k.Volumes, kv)
			}
		}
	}
	if !v.PodsRead && !v.SummaryRead {
		return nil
	}
	return v
}

// nodeProxy GETs a kubelet endpoint through the apiserver's node proxy
// (nodes/proxy) and decodes its JSON.
func (c *Collector) nodeProxy(ctx context.Context, node, path string, into any) error {
	raw, err := c.Clients.Typed.CoreV1().RESTClient().Get().
		Resource("nodes").Name(node).SubResource("proxy").Suffix(path).
		Do(ctx).Raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("the kubelet's %s is not what a kubelet answers: %w", path, err)
	}
	return nil
}

// kubeletSkip is skipOf, with the apiserver failing to reach the kubelet
// (it answers 502 or 503 for its own dial) said as such.
func kubeletSkip(check string, err error) report.Skip {
	sk := skipOf(check, err)
	switch {
	case sk.Reason != report.SkipError:
	case apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || isBadGateway(err):
		sk.Reason = observed.SkipUnreachable
	case apierrors.IsBadRequest(err):
		// The node proxy dials only global unicast addresses ("address not
		// allowed"): a node whose address is loopback or link-local is
		// never reached, whatever runs there.
		sk.Reason = observed.SkipUnreachable
		sk.Detail = "the apiserver's node proxy refuses the node's address (it dials only global unicast addresses, not loopback or link-local): " + sk.Detail
	}
	return sk
}

func isBadGateway(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == 502
}
