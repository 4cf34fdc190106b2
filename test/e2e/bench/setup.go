package bench

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		k := kinds[i%len(kinds)]
		g.Go(func() error {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": k.Group + "/v1", "kind": k.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("o%06d", i), "namespace": ns},
			}}
			if i%10 == 0 {
				obj.SetFinalizers([]string{Finalizer})
			}
			_, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: k.Group, Version: "v1", Resource: k.Plural}).Namespace(ns).Create(gctx, obj, metav1.CreateOptions{})
			return err
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
// connections and never answers: a listener on a local, non-loopback
// address (an endpoint may not be loopback), reached through an
// EndpointSlice (the bench lab routes the aggregator to endpoints).
func HungAPIService(ctx context.Context, env *scenario.Env, group string) (stop func(), err error) {
	ip, err := localIP()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	stop = func() {
		_ = ln.Close()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	const ns, svc = "bench-system", "hung"
	if err := env.Namespace(ctx, ns); err != nil {
		return stop, err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	name, proto, ready := "https", corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}}
	if _, err := env.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	// The aggregator's endpoint routing may read core Endpoints rather than slices: write both.
	//lint:ignore SA1019 deprecated, but what the aggregator may read
	subsets := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}}, Ports: []corev1.EndpointPort{{Name: name, Port: port}}}}
	//lint:ignore SA1019 deprecated, but what the aggregator may read
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns}, Subsets: subsets}
	if _, err := env.Client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	return stop, env.APIService(ctx, group, "v1", ns, svc)
}

// localIP is the first non-loopback IPv4 address of the machine.
func localIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address: the hung APIService case needs one")
}
