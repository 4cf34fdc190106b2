package celeval

import "testing"

func TestEval(t *testing.T) {
	pod := map[string]any{"metadata": map[string]any{"name": "web-0", "labels": map[string]any{"app": "web"}}}
	kubelet := Request{Operation: "DELETE", Version: "v1", Resource: "pods", Kind: "Pod", Namespace: "shop", Name: "web-0",
		User: &User{Username: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}, OldObject: pod}
	unknownSender := kubelet
	unknownSender.User = nil
	cases := []struct {
		name string
		expr string
		r    Request
		want Result
	}{
		{"the kubelet is excluded", `!("system:nodes" in request.userInfo.groups)`, kubelet, False},
		{"the kubelet is matched", `request.userInfo.username.startsWith("system:node:")`, kubelet, True},
		{"DELETE has no object", `object == null && oldObject.metadata.labels.app == "web"`, kubelet, True},
		{"resource rule", `request.resource.resource == "pods" && request.operation == "DELETE"`, kubelet, True},
		{"sender unknown", `request.userInfo.username != "admin"`, unknownSender, Unknown},
		{"sender unknown, but not read", `request.resource.group == ""`, unknownSender, True},
		{"sender unknown, decided anyway", `request.operation == "CREATE" && request.userInfo.username == "x"`, unknownSender, False},
		{"params cannot be read", `oldObject.metadata.name == params.name`, kubelet, Unknown},
		{"the authorizer cannot be asked", `authorizer.group("").resource("pods").check("delete").allowed()`, kubelet, Unknown},
		{"a missing field is an error", `oldObject.spec.nodeName == "n1"`, kubelet, Unknown},
		{"not boolean", `oldObject.metadata.name`, kubelet, Unknown},
		{"does not compile here", `isQuantity("1Gi")`, kubelet, Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Eval(tc.expr, tc.r, nil)
			if got != tc.want {
				t.Errorf("Eval(%s) = %s (%v), want %s", tc.expr, got, err, tc.want)
			}
			if (got == Unknown) != (err != nil) {
				t.Errorf("Unknown must come with its reason: %s, %v", got, err)
			}
		})
	}
	vars := map[string]any{"isWeb": true}
	if got, err := Eval(`variables.isWeb`, kubelet, vars); got != True {
		t.Errorf("variables: %s %v", got, err)
	}
}
