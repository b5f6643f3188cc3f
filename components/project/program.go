package project

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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
// means the root the engine reports, else the nearest directory holding a
// Pulumi.yaml at or above the working directory (ProjectRootAbove): a
// language host older than the engine reports no root and runs the program
// in its `main` directory (cmd/paddock-pulumi for this repository's project).
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
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			root = ProjectRootAbove(wd)
		}
		p, err := c.Load(ctx.Context(), root, errOut)
		if err != nil {
			return err
		}
		return program.New(p)(ctx)
	}
}

// ProjectRootAbove is the nearest directory at or above dir that holds a
// Pulumi project file (Pulumi.yaml or Pulumi.yml), as Pulumi finds a project;
// dir itself when none does.
func ProjectRootAbove(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, name := range []string{"Pulumi.yaml", "Pulumi.yml"} {
			if st, err := os.Stat(filepath.Join(d, name)); err == nil && st.Mode().IsRegular() {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
