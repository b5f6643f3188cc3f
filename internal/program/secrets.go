package program

import (
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/model"
)

// keepSecrets registers a stack transformation that marks every resource
// input holding a sensitive value of the platform (a variable declared
// `sensitive = true`, or one that came from a Pulumi config secret) as a
// Pulumi secret, wherever it sits in the object: the engine then encrypts it
// in the state with the stack's secrets provider, and shows it as [secret].
// Nothing is registered when the platform has no sensitive values.
func keepSecrets(ctx *pulumi.Context, p *model.Platform) error {
	values := p.SensitiveValues()
	if len(values) == 0 {
		return nil
	}
	return ctx.RegisterStackTransformation(func(args *pulumi.ResourceTransformationArgs) *pulumi.ResourceTransformationResult {
		if args.Props == nil {
			return nil
		}
		props, changed := secretInputs(args.Props, values)
		if !changed {
			return nil
		}
		return &pulumi.ResourceTransformationResult{Props: props, Opts: args.Opts}
	})
}

// secretInputs returns in with every string that contains one of values
// replaced by a secret, and whether anything was replaced.
func secretInputs(in pulumi.Input, values []string) (pulumi.Input, bool) {
	switch x := in.(type) {
	case pulumi.Map:
		out := make(pulumi.Map, len(x))
		changed := false
		for k, v := range x {
			nv, c := secretInputs(v, values)
			out[k] = nv
			changed = changed || c
		}
		return out, changed
	case pulumi.Array:
		out := make(pulumi.Array, len(x))
		changed := false
		for i, v := range x {
			nv, c := secretInputs(v, values)
			out[i] = nv
			changed = changed || c
		}
		return out, changed
	case pulumi.String:
		if containsAny(string(x), values) {
			return pulumi.ToSecret(x), true
		}
	case pulumi.StringArray:
		for _, s := range x {
			if str, ok := s.(pulumi.String); ok && containsAny(string(str), values) {
				return pulumi.ToSecret(x), true
			}
		}
	case pulumi.StringMap:
		for _, s := range x {
			if str, ok := s.(pulumi.String); ok && containsAny(string(str), values) {
				return pulumi.ToSecret(x), true
			}
		}
	}
	return in, false
}

func containsAny(s string, values []string) bool {
	for _, v := range values {
		if v != "" && strings.Contains(s, v) {
			return true
		}
	}
	return false
}
