package bench

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Finalizer is the finalizer the bench's objects hold (10% of them).
const Finalizer = "hold.bench.example.com/keep"

// Kinds names n CRDs spread over groups API groups.
func Kinds(n, groups int) []scenario.BulkKind {
	kinds := make([]scenario.BulkKind, n)
	for i := range kinds {
		kinds[i] = scenario.BulkKind{Group: fmt.Sprintf("g%02d.bench.example.com", i%groups), Kind: fmt.Sprintf("Thing%03d", i), Plural: fmt.Sprintf("things%03d", i)}
	}
	return kinds
}

// servedKinds makes the scale's CRDs and waits until they are served.
func servedKinds(ctx context.Context, env *scenario.Env, sz sizes) ([]scenario.BulkKind, error) {
	kinds := Kinds(sz.crds, sz.groups)
	t := time.Now()
	if err := CRDs(ctx, env, kinds); err != nil {
		return nil, err
	}
	progress("%d CRDs in %d groups served in %s", sz.crds, sz.groups, time.Since(t).Round(time.Second))
	return kinds, nil
}

// CRDs creates the kinds' CRDs and waits until each is served.
func CRDs(ctx context.Context, env *scenario.Env, kinds []scenario.BulkKind) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, k := range kinds {
		g.Go(func() error { return env.CRD(gctx, k.Group, k.Kind, k.Plural) })
	}
	return g.Wait()
}

// Objects creates n objects in ns, round-robin over kinds; one in ten holds Finalizer.
func Objects(ctx context.Context, env *scenario.Env, ns string, kinds []scenario.BulkKind, n int) error {
	return objects(ctx, env, ns, kinds, n, 10)
}

// objects creates n objects in ns, round-robin over kinds; one in every
// holds Finalizer (every one when every is 1).
func objects(ctx context.Context, env *scenario.Env, ns string, kinds []scenario.BulkKind, n, every int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		k := kinds[i%len(kinds)]
		g.Go(func() error {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": k.Group + "/v1", "kind": k.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("o%06d", i), "namespace": ns},
			}}
			if i%every == 0 {
				obj.SetFinalizers([]string{Finalizer})
			}
			_, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: k.Group, Version: "v1", Resource: k.Plural}).Namespace(ns).Create(gctx, obj, metav1.CreateOptions{})
			return err
		})
	}
	return g.Wait()
}

// DeleteHeld deletes the objects Objects gave a finalizer: they stay,
// terminating, held by it.
func DeleteHeld(ctx context.Context, env *scenario.Env, ns string, kinds []scenario.BulkKind, n int) error {
	return deleteEvery(ctx, env, ns, kinds, n, 10)
}

// deleteEvery deletes one in every of the n objects objects made.
func deleteEvery(ctx context.Context, env *scenario.Env, ns string, kinds []scenario.BulkKind, n, every int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := 0; i < n; i += every {
		k := kinds[i%len(kinds)]
		g.Go(func() error {
			gvr := schema.GroupVersionResource{Group: k.Group, Version: "v1", Resource: k.Plural}
			return env.Dynamic.Resource(gvr).Namespace(ns).Delete(gctx, fmt.Sprintf("o%06d", i), metav1.DeleteOptions{})
		})
	}
	return g.Wait()
}

// Pods creates perNode pods on each node, spread over namespaces of
// perNamespace pods, bound to their node (there are no kubelets: they stay
// as created). It returns the pods by namespace.
func Pods(ctx context.Context, env *scenario.Env, nodes []string, perNode, perNamespace int) (map[string][]string, error) {
	byNS := map[string][]string{}
	total := len(nodes) * perNode
	for i := range total {
		ns := fmt.Sprintf("apps-%03d", i/perNamespace)
		byNS[ns] = append(byNS[ns], fmt.Sprintf("pod-%05d", i))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for ns := range byNS {
		g.Go(func() error { return env.Namespace(gctx, ns) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(64)
	i := 0
	for ns, names := range byNS {
		for _, name := range names {
			node := nodes[i%len(nodes)]
			i++
			g.Go(func() error {
				_, err := env.Client.CoreV1().Pods(ns).Create(gctx, scenario.PodSpec(ns, name, node), metav1.CreateOptions{})
				return err
			})
		}
	}
	return byNS, g.Wait()
}

// HungAPIService registers an aggregated API whose backend accepts
// connections and never answers: a listener on a test host the lab makes
// (a network namespace: an endpoint may not be a loopback address), reached
// through an EndpointSlice (every lab routes the aggregator to endpoints).
// It waits until the aggregator calls it unavailable.
func HungAPIService(ctx context.Context, env *scenario.Env, host *scenario.TestHost, group string) (stop func(), err error) {
	ln, err := host.Listen()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	stop = func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	const ns, svc = "bench-system", "hung"
	if err := env.LocalService(ctx, ns, svc, host.PeerIP, int32(ln.Addr().(*net.TCPAddr).Port)); err != nil {
		return stop, err
	}
	return stop, env.APIService(ctx, group, "v1", ns, svc)
}
