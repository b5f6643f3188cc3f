package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/termtext"
	"github.com/paddock-platform/paddock/schemas"
)

// validateFlags are the flags of `paddock validate`.
type validateFlags struct {
	vars     []string
	varFiles []string
	format   string
	rules    bool
	verbose  bool
}

// newSpecValidateCmd is `paddock validate`: decode, evaluate and run policy,
// touching no cluster. Exit 0 when the spec loads and no unwaived error
// finding remains, 1 otherwise.
func newSpecValidateCmd() *cobra.Command {
	f := &validateFlags{}
	cmd := &cobra.Command{
		Use:   "validate [SPEC]",
		Short: "Check a spec and its hardening policy, touching no cluster",
		Long: `Validate decodes the spec in SPEC (a directory of *.hcl files, default .), evaluates
its variables and expressions, and checks the result against Paddock's hardening
rules. Every problem is reported in one run. Exit status: 0 when the spec loads and
no unwaived error finding remains (warnings and notes do not fail), 1 otherwise.

Formats: text (default, for people), json (one document), sarif (SARIF 2.1.0, for
code scanning: waived findings carry their waiver as a suppression).`,
		Example: `  paddock validate examples/local
  paddock validate specs/prod --var-file prod.pvars.hcl --var project=my-agents-prod
  paddock validate --format sarif > paddock.sarif
  paddock validate --rules`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.rules {
				return policy.WriteRules(cmd.OutOrStdout(), f.verbose)
			}
			return runValidate(cmd.OutOrStdout(), specArg(args), f, time.Now())
		},
	}
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a spec variable, NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&f.varFiles, "var-file", nil, "read variables from a vars file (*.pvars.hcl, repeatable)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output format: text, json or sarif")
	cmd.Flags().BoolVar(&f.rules, "rules", false, "list the policy rules and the checklist items they trace to, then exit")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "show the control each finding protects and its checklist items")
	return cmd
}

// errSilentExit fails the command with exit status 1 and no further message
// (the report already said everything).
var errSilentExit = &exitError{code: 1, err: errors.New("")}

func runValidate(out io.Writer, dir string, f *validateFlags, now time.Time) error {
	switch f.format {
	case "text", "json", "sarif":
	default:
		return fmt.Errorf("--format %q: use text, json or sarif", f.format)
	}
	vars, err := parseVarFlags(f.vars)
	if err != nil {
		return err
	}
	loader := schemas.NewLoader()
	p, diags := loader.LoadDir(dir, schemas.LoadOptions{Vars: vars, VarFiles: f.varFiles})
	outputRedaction.add(p)
	// Every line of the report goes through the platform's redaction (the
	// success line names the platform, whose name may hold a sensitive
	// value), whatever writer the caller gave.
	if p != nil {
		buf, w := &bytes.Buffer{}, out
		defer func() { _, _ = w.Write([]byte(p.Redact(buf.String()))) }()
		out = buf
	}
	var report *policy.Report
	if p != nil {
		report = policy.Check(p, now)
	}
	failed := diags.HasErrors() || (report != nil && report.Blocking())

	switch f.format {
	case "json":
		if err := policy.WriteJSON(out, report, specDiagnostics(diags)); err != nil {
			return err
		}
	case "sarif":
		if err := policy.WriteSARIF(out, report, specDiagnostics(diags), toolVersion()); err != nil {
			return err
		}
	default:
		loader.WriteDiagnostics(out, diags)
		if report == nil {
			return &exitError{code: 1, err: fmt.Errorf("%s has errors", dir)}
		}
		if err := writePolicyReport(out, loader, report, f.verbose); err != nil {
			return err
		}
		if !failed {
			fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("%s: platform %q is valid (%d tenant%s, %d runtime class%s, target %s)",
				dir, p.Name, len(p.Tenants), countSuffix(len(p.Tenants), ""), len(p.RuntimeClasses), countSuffix(len(p.RuntimeClasses), "es"), p.Target.Kind), "", "  "))
		}
	}
	if failed {
		return errSilentExit
	}
	return nil
}

// parseVarFlags turns NAME=VALUE flags into LoadOptions.Vars.
func parseVarFlags(flags []string) (map[string]string, error) {
	vars := map[string]string{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--var %q: expected NAME=VALUE", kv)
		}
		vars[k] = v
	}
	return vars, nil
}

// writePolicyReport renders a policy report with source lines from the files
// the loader parsed. `up` uses it too, before applying anything.
func writePolicyReport(w io.Writer, loader *schemas.Loader, r *policy.Report, verbose bool) error {
	files := loader.Files()
	return r.WriteText(w, policy.TextOptions{
		Verbose: verbose,
		Source: func(name string) ([]byte, bool) {
			if f, ok := files[name]; ok && f != nil {
				return f.Bytes, true
			}
			return nil, false
		},
	})
}

// specDiagnostics converts the decoder's diagnostics for the JSON and SARIF
// reports.
func specDiagnostics(diags hcl.Diagnostics) []policy.SpecDiagnostic {
	out := make([]policy.SpecDiagnostic, 0, len(diags))
	for _, d := range diags {
		sd := policy.SpecDiagnostic{Severity: policy.Error, Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			sd.Severity = policy.Warning
		}
		if s := d.Subject; s != nil {
			sd.Src = model.Range{Filename: s.Filename, Line: s.Start.Line, Column: s.Start.Column}
		}
		out = append(out, sd)
	}
	return out
}

// toolVersion is the module version of this build ("(devel)" from a checkout).
func toolVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return ""
}

func countSuffix(n int, suffix string) string {
	if n == 1 {
		return ""
	}
	if suffix == "" {
		return "s"
	}
	return suffix
}
