// Package report holds the report contract (the JSON/YAML schema runbooks
// depend on) and its human rendering. Fields may be added, never removed or
// renamed: TestSchemaIsStable fails on either.
package report

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

const (
	// APIVersion versions the schema below; bump it only for incompatible changes.
	APIVersion = "terminating.kubectl.io/v1alpha1"
	// Kind is the kind of the one document every run prints.
	Kind = "TerminationReport"
)

// Severity of a cause: critical blocks deletion and will not clear by itself,
// warning blocks but may clear or needs a look, info is normal progress.
type Severity string

const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Weight orders severities: the higher, the more severe.
func (s Severity) Weight() int {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Report is the one document a run prints.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// GeneratedAt is the clock the report's durations were computed against.
	GeneratedAt metav1.Time `json:"generatedAt"`
	// Items holds one entry per diagnosed object, most severe first.
	Items []Item `json:"items"`
	// Skipped lists reads the whole run could not make (a forbidden or failing
	// resource type during a scan); the items are what could be found without them.
	Skipped []Skip `json:"skipped,omitempty"`
	// Complete is true when every read the verdicts needed was made: no
	// skipped read in the run nor in any item. A partial report that finds
	// nothing stuck exits 1 (unless --allow-partial), never 0.
	Complete bool `json:"complete"`
	// Server is the apiserver's version and what the verdicts assume of its
	// release (since v0.4; omitted when nothing was diagnosed).
	Server *Server `json:"server,omitempty"`
	// NotApplicable lists the checks the server makes moot: an API it does
	// not serve. Never a skipped read: it does not make a report partial
	// (since v0.4).
	NotApplicable []NotApplicable `json:"notApplicable,omitempty"`
	// Replay marks a report made from a saved snapshot (--snapshot), not
	// from the cluster: when and where it was read (since v0.4; omitted
	// in a live run).
	Replay *Replay `json:"replay,omitempty"`
}

// Replay is what a snapshot file says of the run that saved it. The file
// may be a stranger's: its labels are bounded, and escaped where printed.
type Replay struct {
	// TakenAt is the saved run's clock: the report's durations are as of then.
	TakenAt metav1.Time `json:"takenAt"`
	// Context is the kubeconfig context it read ("" when not recorded).
	Context string `json:"context,omitempty"`
	// PluginVersion is the version of the plugin that saved it.
	PluginVersion string `json:"pluginVersion,omitempty"`
}

// Server is the apiserver's version (GET /version) and, for each behaviour
// the verdicts depend on that changed between releases, what they assume.
type Server struct {
	// GitVersion is empty when the version could not be read.
	GitVersion  string   `json:"gitVersion,omitempty"`
	Assumptions []string `json:"assumptions"`
}

// NotApplicable is a check whose API the server does not serve, and why.
type NotApplicable = observed.NotServed

// Incomplete lists every read the report lacks: the run's, then each
// item's, nested items included.
func (r Report) Incomplete() []Skip {
	out := append([]Skip(nil), r.Skipped...)
	var walk func(items []Item)
	walk = func(items []Item) {
		for i := range items { // by index: an Item and a Cause are hundreds of bytes each
			out = append(out, items[i].Skipped...)
			for j := range items[i].Causes {
				walk(items[i].Causes[j].BlockedBy)
			}
		}
	}
	walk(r.Items)
	return out
}

// Item is the diagnosis of one object with a deletionTimestamp.
type Item struct {
	Object            ObjectRef   `json:"object"`
	DeletionTimestamp metav1.Time `json:"deletionTimestamp"`
	// GracePeriodSeconds is metadata.deletionGracePeriodSeconds (0 when unset).
	GracePeriodSeconds int64 `json:"gracePeriodSeconds"`
	// TerminatingSeconds counts from the deletion request
	// (deletionTimestamp - deletionGracePeriodSeconds).
	TerminatingSeconds int64 `json:"terminatingSeconds"`
	// OverdueSeconds counts past the deletion deadline (deletionTimestamp); 0 while inside it.
	OverdueSeconds int64 `json:"overdueSeconds"`
	// Finalizers is the object's metadata.finalizers as read (since v0.2).
	Finalizers []string `json:"finalizers,omitempty"`
	// ResourceVersion is the object's metadata.resourceVersion as read
	// (since v0.4): a fix plan is for this version of it.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Node is a pod's spec.nodeName as read (since v0.4): empty for other
	// kinds and for a pod not scheduled.
	Node string `json:"node,omitempty"`
	// Stuck is true when the top cause blocks deletion (severity warning or
	// critical); in a forecast, when the deletion would stick.
	Stuck bool `json:"stuck"`
	// Forecast marks the item of kubectl terminating preflight (since v0.7):
	// the object is not being deleted, and its causes say what would hold
	// its deletion were it to begin now.
	Forecast bool `json:"forecast,omitempty"`
	// Severity is the severity of the top cause.
	Severity Severity `json:"severity"`
	// Causes are ranked: the most likely root cause first.
	Causes []Cause `json:"causes"`
	// Checks is the kubelet's reclaim checklist, for pods.
	Checks []Check `json:"checks,omitempty"`
	// Skipped lists the checks not made for this object, and why.
	Skipped []Skip `json:"skipped,omitempty"`
	// ContentsRead says, for a terminating namespace, which types its
	// contents were listed from (since v0.6): those its controller's
	// conditions name, or every namespaced type, and why.
	ContentsRead *ContentsRead `json:"contentsRead,omitempty"`
	// Timeline lists what is known to have happened, oldest first.
	Timeline []Moment `json:"timeline,omitempty"`
}

// Moment is one entry of a timeline.
type Moment struct {
	Time  metav1.Time `json:"time"`
	Event string      `json:"event"`
	// DeletionRequest marks the moment the deletion was requested (since
	// v0.7).
	DeletionRequest bool `json:"deletionRequest,omitempty"`
	// Reason and Message are an event's, for the moment of an event: its
	// reason, and its message quoted (the cluster's words; since v0.7).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ObjectRef names the diagnosed object (defined with the evidence model,
// which names its targets the same way).
type ObjectRef = observed.ObjectRef

// ContentsRead says which types a namespace's contents were listed from.
type ContentsRead = observed.ContentsRead

// Cause is one reason the object is still there.
type Cause struct {
	// Code is a stable name from the cause catalogue (docs/causes.md).
	Code       string   `json:"code"`
	Severity   Severity `json:"severity"`
	Confidence float64  `json:"confidence"`
	Summary    string   `json:"summary"`
	// Evidence names the exact field, condition, event or object read: the
	// lines of Facts, in their order (Diagnose writes them from the facts).
	Evidence []string `json:"evidence"`
	// Facts is the evidence as data (since v0.6): Facts[i] is Evidence[i]
	// with the object, field, value and words it was read from.
	Facts []Fact `json:"facts,omitempty"`
	// Remediation is ordered from safest to riskiest.
	Remediation []Step `json:"remediation"`
	// About holds the arguments that identify the cause beside its code
	// (since v0.4): objects held the same way share them, whatever the
	// summary's wording, durations or counts.
	About About `json:"about,omitzero"`
	// Forecast marks a cause foreseen by preflight (since v0.7): what would
	// hold the deletion, not what holds it.
	Forecast bool `json:"forecast,omitempty"`
	// BlockedBy nests the diagnosis of the objects that block this one.
	BlockedBy []Item `json:"blockedBy,omitempty"`
	// Docs is the address of the code's entry in the published catalogue (since v0.2).
	Docs string `json:"docs,omitempty"`
	// Until is when a verdict that holds for a while only lapses (a
	// controller seen at work: its latest write plus the settle time), for
	// list -w to diagnose again then; zero for none. Not in the JSON.
	Until time.Time `json:"-"`
	// Quotes are the summaries of other causes that Summary quotes whole,
	// and Names the objects it names (as Name names them), as the rule that
	// composed it says: the renderer prints each sentence once, and calls a
	// group of blockers the summary lists "the objects above". Not in the
	// JSON, whose texts are all whole.
	Quotes []string `json:"-"`
	Names  []string `json:"-"`
}

// Fact is one piece of evidence as data: what was read, where, and what
// it said. Text is the line a person reads; the other fields are what a
// script selects on (`.facts[] | select(.field == "status.conditions[Ready]")`).
type Fact struct {
	Text string `json:"text"`
	// Object is the object read, when it is not the item itself (its node,
	// a claim, a webhook configuration, what its spec names).
	Object *ObjectRef `json:"object,omitempty"`
	// Field is where it was read, as a path: "spec.nodeName",
	// "status.conditions[Ready]", "metadata.finalizers", "status.error.message";
	// "event" for an event about the object.
	Field string `json:"field,omitempty"`
	// Value is what the field holds: a condition's status, a phase, a name.
	Value string `json:"value,omitempty"`
	// Reason is the reason a controller gave, in a condition or an event.
	Reason string `json:"reason,omitempty"`
	// Quote is the cluster's own words, verbatim: a condition's or an
	// event's message, a status error.
	Quote string `json:"quote,omitempty"`
	// At is when it was written or last happened, when that is known.
	At *metav1.Time `json:"at,omitempty"`
}

// Noted is a fact known by its line alone.
func Noted(text string) Fact { return Fact{Text: text} }

// FieldFact is a field of the object and its value: "spec.type: LoadBalancer".
func FieldFact(field, value string) Fact {
	return Fact{Text: field + ": " + value, Field: field, Value: value}
}

// Lines are the facts' lines, in order.
func Lines(facts []Fact) []string {
	out := make([]string, len(facts))
	for i, f := range facts {
		out[i] = f.Text
	}
	return out
}

// About is what a cause is about: the finalizers, node, object or webhook it
// names, the reason a controller gave and how many objects it counts. Which
// of them a code must fill is declared in the catalogue (catalog.Identity).
type About struct {
	// Finalizers the cause explains.
	Finalizers []string `json:"finalizers,omitempty"`
	// Node the cause is about (a pod's node, a node being drained).
	Node string `json:"node,omitempty"`
	// Object is the other object the cause names: an APIService, an
	// admission policy, a CRD, a claim, a pod a namespace waits for.
	Object *ObjectRef `json:"object,omitempty"`
	// Webhook is a webhook's name (webhooks[].name), as admission errors
	// and the namespace controller's conditions name it.
	Webhook string `json:"webhook,omitempty"`
	// Reason is the reason a controller gave, quoted from its event or
	// condition.
	Reason string `json:"reason,omitempty"`
	// Count is how many objects the cause counts (dependents, leftovers,
	// pods); not part of how an object is held.
	Count int `json:"count,omitempty"`
	// Controller is how the controller that removes the finalizers looks:
	// "alive", "down" (no ready replica) or "gone"; empty when not judged
	// (since v0.4).
	Controller string `json:"controller,omitempty"`
}

// Key is what identifies the cause beside its code: every field but Count,
// and of Object its kind, namespace and name.
func (a About) Key() string {
	var obj string
	if a.Object != nil {
		obj = a.Object.Kind + "/" + a.Object.Namespace + "/" + a.Object.Name
	}
	return strings.Join([]string{strings.Join(a.Finalizers, ","), a.Node, obj, a.Webhook, a.Reason, a.Controller}, "\x00")
}

// Step is one remediation step.
type Step struct {
	// ID names the step within its cause's code, for good (since v0.6): the
	// catalogue declares it (docs/causes.md), so a script can select a step
	// whatever its wording.
	ID      string `json:"id,omitempty"`
	Action  string `json:"action"`
	Command string `json:"command,omitempty"`
	// Node is where the command runs when that is a node, not the machine
	// kubectl runs on (journalctl, crictl, systemctl): a shell on that node
	// (since v0.4).
	Node string `json:"node,omitempty"`
	// Risk says, for a person, what carrying the step out risks.
	Risk string `json:"risk"`
	// RiskLevel grades it for a script (since v0.2).
	RiskLevel RiskLevel `json:"riskLevel"`
	// Apply is the step as the one API request `fix` sends for it (since
	// v0.4); absent for a step a person carries out.
	Apply *Action `json:"apply,omitempty"`
}

// Action is a remediation step as an API request.
type Action struct {
	// Verb is ActionRemoveFinalizer, ActionDelete or ActionTaintOutOfService.
	Verb   string    `json:"verb"`
	Object ObjectRef `json:"object"`
	// Finalizer is the one entry of metadata.finalizers a removal takes out.
	Finalizer string `json:"finalizer,omitempty"`
	// ResourceVersion is the object's metadata.resourceVersion the decision
	// was made on (since v0.5): with Object.UID, the identity fix checks on
	// its fresh read before it sends anything.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// The verbs of an Action.
const (
	// ActionRemoveFinalizer: a JSON patch that tests the object's uid,
	// resourceVersion and the finalizer's index, then removes that entry.
	ActionRemoveFinalizer = "remove-finalizer"
	// ActionDelete: a DELETE with the object's uid and resourceVersion as
	// preconditions (an orphaned webhook configuration or APIService).
	ActionDelete = "delete"
	// ActionTaintOutOfService: a JSON patch that tests the Node's uid and
	// resourceVersion and adds node.kubernetes.io/out-of-service:NoExecute
	// (non-graceful node shutdown: the pod GC then removes its pods).
	ActionTaintOutOfService = "taint-out-of-service"
)

// RiskLevel grades a remediation step, so a runbook can keep the safe ones.
type RiskLevel string

const (
	// RiskNone: reads, waiting, advice; nothing in the cluster changes.
	RiskNone RiskLevel = "none"
	// RiskLow: repairs what failed, or a change whose only cost is small and
	// recoverable (the owner of a foreground deletion going first).
	RiskLow RiskLevel = "low"
	// RiskHigh: skips a safety check or a cleanup, or changes something
	// cluster-wide (admission, an API); recoverable with work.
	RiskHigh RiskLevel = "high"
	// RiskDestructive: can lose data or run a workload twice (split brain).
	RiskDestructive RiskLevel = "destructive"
)

// Weight orders risk levels: destructive is the heaviest, unknown levels 0.
func (l RiskLevel) Weight() int {
	switch l {
	case RiskNone:
		return 1
	case RiskLow:
		return 2
	case RiskHigh:
		return 3
	case RiskDestructive:
		return 4
	}
	return 0
}

// CheckStatus is the outcome of one reclaim check.
type CheckStatus string

const (
	Pass CheckStatus = "pass"
	// Pending: not yet, as expected: the grace period runs, or the kubelet
	// does this only after a row before it passes.
	Pending CheckStatus = "pending"
	// Fail: not done when it should be, or refused.
	Fail    CheckStatus = "fail"
	Unknown CheckStatus = "unknown"
)

// Check is one line of the kubelet's reclaim checklist.
type Check struct {
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail"`
	// Quotes are the causes' summaries Detail quotes whole (a refusal of
	// the final DELETE), which the renderer replaces by the cause's number.
	// Not in the JSON.
	Quotes []string `json:"-"`
}

// SkipReason says why a read was not made.
type SkipReason = observed.SkipReason

// The reasons a read was not made.
const (
	SkipForbidden = observed.SkipForbidden
	SkipTimeout   = observed.SkipTimeout
	SkipDiscovery = observed.SkipDiscovery
	SkipError     = observed.SkipError
)

// Skip records a read that was not made; the report carries on without it.
type Skip = observed.Skip
