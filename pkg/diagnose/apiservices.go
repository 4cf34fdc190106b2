package diagnose

import (
	"fmt"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// apiServiceCauses names the unavailable APIServices behind failing group
// versions: one broken aggregated API blocks every namespace deletion in the
// cluster, since the namespace controller cannot tell a namespace is empty.
func apiServiceCauses(s *observed.Snapshot, groupVersions []string) []report.Cause {
	var causes []report.Cause
	for _, gv := range groupVersions {
		for _, a := range s.APIServices {
			if a.Name != apiServiceName(gv) || a.Available == "True" {
				continue
			}
			causes = append(causes, apiServiceCause(a, gv))
		}
	}
	return causes
}

// unavailableGroupVersions lists the group versions of the APIServices that
// are not Available, whether or not the namespace controller named them yet.
func unavailableGroupVersions(s *observed.Snapshot) []string {
	var out []string
	for _, a := range s.APIServices {
		if a.Available != "True" {
			out = append(out, a.Group+"/"+a.Version)
		}
	}
	return out
}

func apiServiceCause(a observed.APIService, gv string) report.Cause {
	evidence := []report.Fact{
		apiServiceAvailable(a),
		report.Noted(fmt.Sprintf("apiservice %s: served by service %s", a.Name, a.Service)),
	}
	if a.ReadyEndpoints != nil {
		evidence = append(evidence, report.Noted(fmt.Sprintf("service %s: %d ready endpoints", a.Service, *a.ReadyEndpoints)))
	}
	evidence = append(evidence, report.Noted("discovery of "+gv+" fails for every client: namespace deletion and garbage collection stall cluster-wide"))
	c := cause(catalog.APIServiceUnavailable, report.Critical, 0.9,
		fmt.Sprintf("aggregated API %s is unavailable (%s): discovery fails, so no namespace in the cluster can finish deleting", gv, a.Reason),
		evidence,
		step(catalog.APIServiceUnavailable, "check-apiservice", then(kubectlOn("", "get", "apiservice", a.Name, "-o", "yaml"), kubectl(strings.SplitN(a.Service, "/", 2)[0], "get", "endpointslices"))),
		step(catalog.APIServiceUnavailable, "restore-backend", ""),
		step(catalog.APIServiceUnavailable, "delete-apiservice", kubectlOn("", "delete", "apiservice", a.Name)))
	c.About.Object = &report.ObjectRef{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Resource: "apiservices.apiregistration.k8s.io", Name: a.Name, UID: a.UID}
	c.About.Reason = a.Reason
	if backendGone(a) { // orphaned: fix may delete it
		c.Remediation[len(c.Remediation)-1].Apply = &report.Action{Verb: report.ActionDelete, Object: *c.About.Object, ResourceVersion: a.ResourceVersion}
	}
	return c
}

// backendGone: the APIService's Service has no ready endpoint, or is
// missing (the reasons the aggregator's availability controller gives).
func backendGone(a observed.APIService) bool {
	return (a.ReadyEndpoints != nil && *a.ReadyEndpoints == 0) || a.Reason == "ServiceNotFound" || a.Reason == "MissingEndpoints"
}

// apiServiceAvailable quotes an APIService's Available condition.
func apiServiceAvailable(a observed.APIService) report.Fact {
	return report.Fact{Text: fmt.Sprintf("apiservice %s: condition Available=%s reason %s: %s", a.Name, a.Available, a.Reason, a.Message),
		Object: &report.ObjectRef{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Resource: "apiservices", Name: a.Name},
		Field:  "status.conditions[Available]", Value: a.Available, Reason: a.Reason, Quote: a.Message}
}
