package scenario

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LocalService makes Service ns/svc (port 443) lead to ip:port, through an
// EndpointSlice and, for an aggregator that reads them, core Endpoints. The
// lab routes the aggregator to endpoints (every lab does).
func (e *Env) LocalService(ctx context.Context, ns, svc, ip string, port int32) error {
	if err := e.Namespace(ctx, ns); err != nil {
		return err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	if _, err := e.Client.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return err
	}
	name, proto, ready := "https", corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}}
	if _, err := e.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return err
	}
	//lint:ignore SA1019 deprecated, but what the aggregator may read
	subsets := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}}, Ports: []corev1.EndpointPort{{Name: name, Port: port}}}}
	//lint:ignore SA1019 deprecated, but what the aggregator may read
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns}, Subsets: subsets}
	_, err := e.Client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
	return err
}

// HangingAPI serves an aggregated API, group/version with one namespaced
// resource, whose backend answers discovery (so the aggregator calls it
// Available and clients list it) and never answers anything else: every
// list of that resource hangs until the client gives up. It waits until the
// APIService is Available.
func (e *Env) HangingAPI(ctx context.Context, group, version, resource, kind string) (stop func(), err error) {
	host, err := NewTestHost() // an endpoint may not be a loopback address
	if err != nil {
		return nil, err
	}
	discovery := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: group + "/" + version,
		APIResources: []metav1.APIResource{{Name: resource, Kind: kind, Namespaced: true, Verbs: []string{"get", "list", "delete", "deletecollection"}}}}
	body, err := json.Marshal(discovery)
	if err != nil {
		return nil, err
	}
	gv := "/apis/" + group + "/" + version
	closing := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == gv:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		case strings.HasPrefix(r.URL.Path, gv+"/"):
			select { // hangs until the caller gives up, or the test ends
			case <-r.Context().Done():
			case <-closing:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	if srv.Listener, err = host.Listen(); err != nil {
		host.Close()
		return nil, err
	}
	srv.StartTLS()
	stop = func() {
		close(closing) // controllers' requests may have no timeout: release them
		srv.CloseClientConnections()
		srv.Close()
		host.Close()
	}
	port := int32(srv.Listener.Addr().(*net.TCPAddr).Port)
	ns, svc := "hang-system", "hanging-api"
	if err := e.LocalService(ctx, ns, svc, host.PeerIP, port); err != nil {
		return stop, err
	}
	return stop, e.registerAPIService(ctx, group, version, ns, svc, "True")
}

// registerAPIService registers group/version served by ns/svc and waits
// until its Available condition has the status wanted.
func (e *Env) registerAPIService(ctx context.Context, group, version, ns, svc, available string) error {
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	name := version + "." + group
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "version": version, "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": ns, "name": svc}},
	}}
	if _, err := e.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "apiservice "+name+" Available="+available, func(ctx context.Context) (bool, error) {
		got, err := e.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == available {
				return true, nil
			}
		}
		return false, nil
	})
}
