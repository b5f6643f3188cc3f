package project

import (
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

// SpecOptions turns a stack's config into the options of its spec load;
// relative paths are taken from the project directory dir.
func (c *Config) SpecOptions(dir string) specload.Options {
	o := specload.Options{Vars: c.AllVars(), Sensitive: c.SensitiveValues()}
	for _, f := range c.VarFiles {
		o.VarFiles = append(o.VarFiles, inDir(dir, f))
	}
	if c.Target != nil {
		t := *c.Target
		if t.Kubeconfig != "" && !strings.HasPrefix(t.Kubeconfig, "~/") {
			t.Kubeconfig = inDir(dir, t.Kubeconfig)
		}
		o.Target = &t
	}
	return o
}

// SpecDir is the spec path of the stack, taken from the project directory dir.
func (c *Config) SpecDir(dir string) string { return inDir(dir, c.Spec) }

func inDir(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// Load loads the stack's spec (specload.Load) and resolves its target
// (targets.Resolve).
func (c *Config) Load(ctx context.Context, dir string, errOut io.Writer) (*model.Platform, error) {
	p, err := specload.Load(c.SpecDir(dir), c.SpecOptions(dir), errOut)
	if err != nil {
		return nil, err
	}
	if err := targets.Resolve(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}
