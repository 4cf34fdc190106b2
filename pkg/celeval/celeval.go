// Package celeval evaluates the CEL expressions of admission webhooks
// (matchConditions) and ValidatingAdmissionPolicies (matchConditions,
// variables, validations) against a request the plugin predicts: the write
// that would finish a deletion, sent by a known identity or by one it does
// not know. It never guesses: what an expression reads that the prediction
// does not hold (an unknown sender, params, the authorizer, a function of
// Kubernetes' own CEL library) makes the answer Unknown.
//
// github.com/google/cel-go earns its place: it is the interpreter the
// apiserver runs these expressions with (the same version as Kubernetes
// v1.36), with partial evaluation for the parts of a request that cannot be
// known from outside the apiserver.
package celeval

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// Result is what an expression evaluated to.
type Result int

const (
	// Unknown: the expression could not be evaluated from what is known.
	Unknown Result = iota
	True
	False
)

func (r Result) String() string {
	switch r {
	case True:
		return "true"
	case False:
		return "false"
	}
	return "unknown"
}

// User is the identity that sends a request.
type User struct {
	Username string
	Groups   []string
}

// Request is a predicted admission request, as admission's CEL sees it.
type Request struct {
	Operation                string // CREATE, UPDATE, DELETE
	Group, Version, Resource string
	Kind                     string
	Namespace, Name          string
	SubResource              string
	// User is nil when the sender is not known: expressions that read
	// request.userInfo are then Unknown.
	User *User
	// Object and OldObject as admission passes them: a DELETE has no Object
	// and the deleted object as OldObject.
	Object, OldObject map[string]any
	// NamespaceObject is the object's namespace; nil for cluster-scoped objects.
	NamespaceObject map[string]any
}

// vars are the variables admission declares for these expressions.
var vars = []string{"object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"}

var env = func() *cel.Env {
	opts := []cel.EnvOption{
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.Lists(), ext.Math(), ext.Encoders(),
	}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("celeval: %v", err)) // a build defect
	}
	return e
}()

// Eval evaluates a boolean expression against the request, with the given
// policy variables already evaluated (nil for webhooks). The error says why
// the result is Unknown.
func Eval(expr string, r Request, variables map[string]any) (Result, error) {
	v, err := value(expr, r, variables)
	if err != nil {
		return Unknown, err
	}
	b, ok := v.(bool)
	if !ok {
		return Unknown, fmt.Errorf("%q is not a boolean expression", expr)
	}
	if b {
		return True, nil
	}
	return False, nil
}

// Value evaluates an expression (a policy variable) to a Go value.
func Value(expr string, r Request, variables map[string]any) (any, error) {
	return value(expr, r, variables)
}

func value(expr string, r Request, variables map[string]any) (any, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("cannot compile %q here: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptPartialEval))
	if err != nil {
		return nil, err
	}
	activation, unknowns := r.activation(variables)
	input, err := cel.PartialVars(activation, unknowns...)
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(input)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", expr, err)
	}
	if types.IsUnknown(out) {
		return nil, fmt.Errorf("%q reads what cannot be known from outside the apiserver (the sender, params or the authorizer)", expr)
	}
	return out.Value(), nil
}

// activation builds admission's variables; what is not known is declared unknown.
func (r Request) activation(variables map[string]any) (map[string]any, []*cel.AttributePatternType) {
	req := map[string]any{
		"kind":            map[string]any{"group": r.Group, "version": r.Version, "kind": r.Kind},
		"resource":        map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource},
		"requestKind":     map[string]any{"group": r.Group, "version": r.Version, "kind": r.Kind},
		"requestResource": map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource},
		"subResource":     r.SubResource,
		"name":            r.Name,
		"namespace":       r.Namespace,
		"operation":       r.Operation,
		"dryRun":          false,
	}
	unknowns := []*cel.AttributePatternType{cel.AttributePattern("params"), cel.AttributePattern("authorizer")}
	if r.User != nil {
		groups := make([]any, 0, len(r.User.Groups))
		for _, g := range r.User.Groups {
			groups = append(groups, g)
		}
		req["userInfo"] = map[string]any{"username": r.User.Username, "groups": groups}
	} else {
		unknowns = append(unknowns, cel.AttributePattern("request").QualString("userInfo"))
	}
	a := map[string]any{
		"request":         req,
		"object":          nullable(r.Object),
		"oldObject":       nullable(r.OldObject),
		"namespaceObject": nullable(r.NamespaceObject),
	}
	if variables != nil {
		a["variables"] = variables
	} else {
		unknowns = append(unknowns, cel.AttributePattern("variables"))
	}
	return a, unknowns
}

// nullable is CEL's null for an absent object (a DELETE's object).
func nullable(m map[string]any) any {
	if m == nil {
		return types.NullValue
	}
	return m
}
