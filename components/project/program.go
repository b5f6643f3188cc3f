package project

import (
	"fmt"
	"io"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/program"
)

// FromContext reads the stack's paddock:* config from a running Pulumi program.
func FromContext(ctx *pulumi.Context) (*Config, error) {
	values := map[string]Value{}
	for _, k := range Keys {
		if v, ok := ctx.GetConfig(k); ok {
			values[k] = Value{Value: v, Secret: ctx.IsConfigSecret(k)}
		}
	}
	c, err := Parse(values)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", ctx.Stack(), err)
	}
	return c, nil
}

// Program is the Pulumi program of a platform repository: it reads the
// stack's config, loads and gates the spec it names (specload.Load, writing
// diagnostics and the policy report to errOut), resolves the target and runs
// program.New. Relative paths in the config are taken from the project root
// (where Pulumi.yaml is), which the engine reports to the program. `pulumi up`
// runs it through cmd/paddock-pulumi; `paddock up --stack` runs the very same
// function inline (ProgramAt).
func Program(errOut io.Writer) pulumi.RunFunc {
	return ProgramAt("", errOut)
}

// ProgramAt is Program for a project at dir, for inline runs: the Automation
// API does not report the project root to an inline program. An empty dir
// means the root the engine reports, else the working directory.
func ProgramAt(dir string, errOut io.Writer) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		c, err := FromContext(ctx)
		if err != nil {
			return err
		}
		root := ctx.RootDirectory()
		if root == "" {
			root = dir
		}
		if root == "" {
			if root, err = os.Getwd(); err != nil {
				return err
			}
		}
		p, err := c.Load(ctx.Context(), root, errOut)
		if err != nil {
			return err
		}
		return program.New(p)(ctx)
	}
}
