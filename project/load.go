package project

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/localcluster"
	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// SpecOptions are the inputs of one spec load.
type SpecOptions struct {
	// Vars and VarFiles are as schemas.LoadOptions (-var and --var-file).
	Vars     map[string]string
	VarFiles []string
	// Sensitive are values that came from secrets: the model marks them, so
	// reports redact them and the program keeps them secret in state.
	Sensitive []string
	// Target, when set, points the platform at another cluster before policy runs.
	Target *Target
	// Now is the time waivers are checked against; zero means time.Now().
	Now time.Time
}

// SpecError is a spec that does not load or that policy blocks; the
// diagnostics and the report have already been written.
type SpecError struct{ msg string }

func (e *SpecError) Error() string { return e.msg }

// LoadSpec decodes the spec in dir (a directory of .hcl files or one file),
// writes its diagnostics and the hardening policy report to errOut, and
// stops on spec errors and unwaived policy errors: nothing is applied from a
// spec that does not pass. The CLI and the Pulumi program both load through here.
func LoadSpec(dir string, opts SpecOptions, errOut io.Writer) (*model.Platform, error) {
	if errOut == nil {
		errOut = io.Discard
	}
	loader := schemas.NewLoader()
	p, diags := loader.LoadDir(dir, schemas.LoadOptions{Vars: opts.Vars, VarFiles: opts.VarFiles})
	if len(diags) > 0 {
		// Values from secrets are redacted even where the spec forgot `sensitive = true`.
		var buf strings.Builder
		loader.WriteDiagnostics(&buf, diags)
		fmt.Fprint(errOut, model.RedactValues(buf.String(), opts.Sensitive))
	}
	if diags.HasErrors() {
		return nil, &SpecError{msg: fmt.Sprintf("%s has errors; nothing was applied", dir)}
	}
	for _, v := range opts.Sensitive {
		p.MarkSensitive(v)
	}
	if err := retarget(p, opts.Target); err != nil {
		return nil, err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	report := policy.Check(p, now)
	files := loader.Files()
	if err := report.WriteText(errOut, policy.TextOptions{Source: func(name string) ([]byte, bool) {
		if f, ok := files[name]; ok && f != nil {
			return f.Bytes, true
		}
		return nil, false
	}}); err != nil {
		return nil, err
	}
	if report.Blocking() {
		return nil, &SpecError{msg: fmt.Sprintf("%s: policy errors block this; fix them or add a waiver with a reason (nothing was applied)", dir)}
	}
	return p, nil
}

// retarget points a local or kubeconfig platform at the cluster of t.
func retarget(p *model.Platform, t *Target) error {
	if t == nil || (t.Kubeconfig == "" && t.Context == "") {
		return nil
	}
	switch p.Target.Kind {
	case model.TargetLocal, model.TargetKubeconfig:
	default:
		return fmt.Errorf("%s: a %s target cannot be pointed at another cluster; only local and kubeconfig targets can", KeyTarget, p.Target.Kind)
	}
	if t.Kubeconfig == "" && p.Target.Kind == model.TargetLocal {
		return fmt.Errorf("%s: the spec's target is local; give a kubeconfig to point it at another cluster", KeyTarget)
	}
	p.Target.Kind = model.TargetKubeconfig
	if t.Kubeconfig != "" {
		p.Target.Kubeconfig = t.Kubeconfig
	}
	if t.Context != "" {
		p.Target.Context = t.Context
	}
	return nil
}

// ResolveTarget fills the kubeconfig the engine uses for the platform's
// target, and fails early with what to do when the target cannot be reached.
func ResolveTarget(ctx context.Context, p *model.Platform) error {
	switch p.Target.Kind {
	case model.TargetLocal:
		lc := localcluster.New(localcluster.Options{})
		st, err := lc.Status(ctx)
		// A busy API server can miss the status probe's short deadline: ask again.
		for try := 0; err == nil && st.Exists && !st.APIServer.Ready && try < 3; try++ {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
			st, err = lc.Status(ctx)
		}
		if err != nil {
			return err
		}
		if !st.Exists {
			return errors.New("the local cluster is not running: start it with `paddock local up` (see `paddock local status`)")
		}
		if !st.APIServer.Ready {
			return fmt.Errorf("the local cluster's API server is not ready (%s): see `paddock local status`, or restart it with `paddock local down && paddock local up`", st.APIServer.Detail)
		}
		p.Target.Kubeconfig = st.Kubeconfig
		if p.Target.Context == "" {
			p.Target.Context = st.Context
		}
	case model.TargetKubeconfig:
		if p.Target.Kubeconfig == "" {
			if env := os.Getenv("KUBECONFIG"); env != "" {
				p.Target.Kubeconfig = strings.Split(env, string(os.PathListSeparator))[0]
			} else if h, err := os.UserHomeDir(); err == nil {
				p.Target.Kubeconfig = filepath.Join(h, ".kube", "config")
			}
		}
		if strings.HasPrefix(p.Target.Kubeconfig, "~/") {
			if h, err := os.UserHomeDir(); err == nil {
				p.Target.Kubeconfig = filepath.Join(h, p.Target.Kubeconfig[2:])
			}
		}
		if abs, err := filepath.Abs(p.Target.Kubeconfig); err == nil {
			p.Target.Kubeconfig = abs
		}
		if _, err := os.Stat(p.Target.Kubeconfig); err != nil {
			return fmt.Errorf("target kubeconfig %s: %w", p.Target.Kubeconfig, err)
		}
	case model.TargetGKE:
		// Nothing to resolve: the program creates the cluster and reaches it
		// through the kubernetes provider made from the cluster's outputs, in
		// the same run. Google credentials are the gcp provider's (Application
		// Default Credentials), never part of the spec.
	default:
		return fmt.Errorf("target %q cannot be provisioned by this build", p.Target.Kind)
	}
	return nil
}

// SpecOptions turns a stack's config into the options of its spec load;
// relative paths are taken from the project directory dir.
func (c *Config) SpecOptions(dir string) SpecOptions {
	o := SpecOptions{Vars: c.AllVars(), Sensitive: c.SensitiveValues()}
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

// Load loads the stack's spec (LoadSpec) and resolves its target.
func (c *Config) Load(ctx context.Context, dir string, errOut io.Writer) (*model.Platform, error) {
	p, err := LoadSpec(c.SpecDir(dir), c.SpecOptions(dir), errOut)
	if err != nil {
		return nil, err
	}
	if err := ResolveTarget(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}
