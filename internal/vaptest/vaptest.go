// Package vaptest evaluates a ValidatingAdmissionPolicy the way the API
// server does, for tests that cannot reach one: its variables, then its
// validations in order over the object as JSON, the first that does not hold
// refusing the request with its message. Only tests import it.
//
// What it leaves out: the Kubernetes CEL libraries beyond CEL's standard
// one (a policy using them fails to compile here, never passes), params,
// namespaceObject, authorizer, matchConditions, and the cost budget.
package vaptest

import (
	"fmt"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// Refusal is what the API server answers when the policy denies a request:
// the first failing validation's message, or for an expression that ends in
// an error, a message naming it (failurePolicy Fail denies those too).
type Refusal struct {
	Message string
	// Index is the refusing validation's position in the policy.
	Index int
}

// Admit evaluates policy on a request for object; oldObject is nil on
// CREATE and the stored object on UPDATE. It returns nil when every
// validation admits the request, and an error when the policy does not
// compile.
func Admit(policy *admissionv1.ValidatingAdmissionPolicy, object, oldObject map[string]any) (*Refusal, error) {
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		return nil, err
	}
	operation := "CREATE"
	if oldObject != nil {
		operation = "UPDATE"
	}
	var old any
	if oldObject != nil {
		old = oldObject
	}
	variables := map[string]any{}
	activation := map[string]any{
		"object":    object,
		"oldObject": old,
		"request":   map[string]any{"operation": operation},
		"variables": variables,
	}
	eval := func(expr string) (any, error) {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("%q does not compile: %w", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", expr, err)
		}
		out, _, err := prg.Eval(activation)
		if err != nil {
			return nil, evalError{err}
		}
		return out.Value(), nil
	}
	// The API server evaluates a variable when an expression first reads it;
	// one that fails is left out here, so that reading it fails too.
	for _, v := range policy.Spec.Variables {
		val, err := eval(v.Expression)
		if _, failed := err.(evalError); failed {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		variables[v.Name] = val
	}
	for i, v := range policy.Spec.Validations {
		val, err := eval(v.Expression)
		if e, failed := err.(evalError); failed {
			return &Refusal{Message: fmt.Sprintf("expression '%s' resulted in error: %v", v.Expression, e.err), Index: i}, nil
		}
		if err != nil {
			return nil, err
		}
		if ok, isBool := val.(bool); isBool && ok {
			continue
		}
		msg := v.Message
		if msg == "" {
			msg = "failed expression: " + v.Expression
		}
		return &Refusal{Message: msg, Index: i}, nil
	}
	return nil, nil
}

// evalError is an expression that compiled and failed on the request.
type evalError struct{ err error }

func (e evalError) Error() string { return e.err.Error() }
