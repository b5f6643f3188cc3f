// Package specload loads a spec the way everything that applies one does:
// decode it (schemas), write its diagnostics, point it at another cluster when
// asked, run the hardening policy and write the report, and stop on spec
// errors and unwaived policy errors. The CLI, the Pulumi program of a
// platform repository (package project) and the benchmarks load through Load.
package specload

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// Options are the inputs of one spec load.
type Options struct {
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
	// Report is how the policy report is written (Brief for commands that
	// decide nothing from it); Source is always the spec's own files.
	Report policy.TextOptions
}

// Error is a spec that does not load or that policy blocks; the
// diagnostics and the report have already been written.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Target retargets a platform onto a cluster reached through a kubeconfig
// (a stack's TargetConfigKey).
type Target struct {
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
}

// TargetConfigKey is the stack config key a Target comes from; errors about
// a retarget name it.
const TargetConfigKey = "paddock:target"

// Load decodes the spec in dir (a directory of .hcl files or one file),
// writes its diagnostics and the hardening policy report to errOut, and
// stops on spec errors and unwaived policy errors: nothing is applied from a
// spec that does not pass. The CLI and the Pulumi program both load through here.
func Load(dir string, opts Options, errOut io.Writer) (*model.Platform, error) {
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
		return nil, &Error{msg: fmt.Sprintf("%s has errors; nothing was applied", dir)}
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
	textOpts := opts.Report
	textOpts.Source = func(name string) ([]byte, bool) {
		if f, ok := files[name]; ok && f != nil {
			return f.Bytes, true
		}
		return nil, false
	}
	if err := report.WriteText(errOut, textOpts); err != nil {
		return nil, err
	}
	if report.Blocking() {
		return nil, &Error{msg: fmt.Sprintf("%s: nothing was applied: policy errors block it (fix or waive them)", dir)}
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
		return fmt.Errorf("%s: a %s target cannot be pointed at another cluster; only local and kubeconfig targets can", TargetConfigKey, p.Target.Kind)
	}
	if t.Kubeconfig == "" && p.Target.Kind == model.TargetLocal {
		return fmt.Errorf("%s: the spec's target is local; give a kubeconfig to point it at another cluster", TargetConfigKey)
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
