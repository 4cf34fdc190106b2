package catalog

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// Finalizer is one row of the finalizer catalogue (finalizers.yaml).
type Finalizer struct {
	// Name is the finalizer, or a prefix when it ends in "/".
	Name       string `json:"name"`
	Owner      string `json:"owner"`
	HoldsWhile string `json:"holdsWhile"`
	// Code is the cause that explains an object this finalizer holds.
	Code Code `json:"code"`
	// Workloads name the Deployments, StatefulSets or DaemonSets that run
	// the owner (by name or app label), to judge whether it is alive.
	Workloads []string `json:"workloads,omitempty"`
	// FailureEvents are the reasons of the Warning events the owner records
	// about an object it cannot finish deleting.
	FailureEvents []string `json:"failureEvents,omitempty"`
	// FailureConditions are the status.conditions by which the owner says
	// it cannot finish: a condition of that type with that status (and one
	// of those reasons, when any are listed).
	FailureConditions []ConditionSignal `json:"failureConditions,omitempty"`
	// Writer is the user the owner sends its finalizer-removal write as,
	// when it is fixed: kube-controller-manager's controllers each have a
	// service account in kube-system (--use-service-account-credentials,
	// the usual setup).
	Writer string `json:"writer,omitempty"`
	// ReferencedBy are the objects that keep the finalizer on while they
	// name the held object (in-use protection: a GatewayClass while Gateways
	// use it): the owner is alive and waits for them.
	ReferencedBy []Reference `json:"referencedBy,omitempty"`
	// Source is where the facts of the row were checked (the owner's code).
	Source string `json:"source,omitempty"`
}

// Reference is a kind of object that names a held object in one of its
// fields.
type Reference struct {
	// Group and Resource of the referring objects; they are read in the
	// version the server prefers.
	Group    string `json:"group"`
	Resource string `json:"resource"`
	// Path is the field holding the held object's name, its segments
	// separated by dots, a segment ending in [] for each item of a list:
	// "spec.gatewayClassName", "spec.volumes[].persistentVolumeClaim.claimName".
	Path string `json:"path"`
	// Kind, when set, is the kind a sibling "kind" field of the path must
	// name (references that name several kinds: nodeClassRef.kind).
	Kind string `json:"kind,omitempty"`
	// AnyNamespace: the referrers may be in any namespace (or cluster
	// scoped); otherwise they are in the held object's namespace.
	AnyNamespace bool `json:"anyNamespace,omitempty"`
	// Of, when set, is the held kind the reference is about, for a
	// finalizer several kinds carry (Kueue's resource-in-use).
	Of string `json:"of,omitempty"`
}

// ReferencesTo are the row's references that can name an object of kind.
func (f Finalizer) ReferencesTo(kind string) []Reference {
	var out []Reference
	for _, r := range f.ReferencedBy {
		if r.Of == "" || r.Of == kind {
			out = append(out, r)
		}
	}
	return out
}

// ConditionSignal is a status condition that reports a failure.
type ConditionSignal struct {
	Type    string   `json:"type"`
	Status  string   `json:"status"`
	Reasons []string `json:"reasons,omitempty"`
}

//go:embed finalizers.yaml
var finalizersYAML []byte

// declaredFinalizers is finalizers.yaml parsed, for data.go (the rows a run
// reads, finalizers); a malformed table fails the generator and the tests.
func declaredFinalizers() []Finalizer {
	var out []Finalizer
	if err := yaml.UnmarshalStrict(finalizersYAML, &out); err != nil {
		panic(fmt.Sprintf("catalog: finalizers.yaml: %v", err))
	}
	return out
}

// Finalizers returns the catalogue's rows, in order.
func Finalizers() []Finalizer { return append([]Finalizer(nil), finalizers...) }

// thirdParty describes a finalizer no Kubernetes component owns.
var thirdParty = Finalizer{Owner: "a third-party controller", HoldsWhile: "that controller removes it; if the controller is gone, nothing ever will", Code: FinalizerPending}

// LookupFinalizer returns the catalogue row of a finalizer (Name is the
// row's name or prefix; a prefix row's Owner names the driver), and whether
// it is known; an unknown finalizer gets the third-party row, with no Name.
func LookupFinalizer(f string) (Finalizer, bool) {
	if l, ok := lookedUp.Load(f); ok {
		l := l.(lookup)
		return l.row, l.known
	}
	row, known := lookupFinalizer(f)
	lookedUp.Store(f, lookup{row, known})
	return row, known
}

// lookedUp remembers each finalizer's row: the rules ask it of every held
// object, many times (a run of list -A on thousands of them), and the
// catalogue does not change.
var lookedUp sync.Map // finalizer name -> lookup

type lookup struct {
	row   Finalizer
	known bool
}

func lookupFinalizer(f string) (Finalizer, bool) {
	for _, row := range finalizers {
		if row.Name == f {
			return row, true
		}
		if strings.HasSuffix(row.Name, "/") && strings.HasPrefix(f, row.Name) {
			row.Owner += " " + strings.TrimPrefix(f, row.Name)
			return row, true
		}
	}
	return thirdParty, false
}

// FinalizerOwner returns who removes a finalizer and what it holds while.
func FinalizerOwner(f string) Finalizer {
	row, _ := LookupFinalizer(f)
	return row
}

// ThirdPartyFinalizer reports a finalizer that no Kubernetes component owns:
// its controller comes from an add-on, which may be gone. That is a finalizer
// the catalogue lacks, or a catalogued one the generic FinalizerPending
// explains whose row was not checked in kubernetes/kubernetes (an operator's:
// Argo CD, Crossplane, ...): its owner's liveness is judged as for any other.
func ThirdPartyFinalizer(f string) bool {
	row, known := LookupFinalizer(f)
	return !known || (row.Code == FinalizerPending || row.Code == ObjectInUse) && !strings.HasPrefix(row.Source, kubernetesSource)
}

// kubernetesSource starts the source of a row Kubernetes itself owns.
const kubernetesSource = "kubernetes/kubernetes "
