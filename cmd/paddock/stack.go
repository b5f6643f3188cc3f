package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/engine"
	"github.com/paddock-platform/paddock/localcluster"
	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// specFlags select a spec and its stack.
type specFlags struct {
	stack    string
	backend  string
	vars     []string
	varFiles []string
}

func (f *specFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.stack, "stack", "", "stack name (default: the platform's name)")
	cmd.Flags().StringVar(&f.backend, "backend", "", "Pulumi backend URL (default: file://$PADDOCK_HOME/state)")
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a spec variable, NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&f.varFiles, "var-file", nil, "read variables from a vars file (*.pvars.hcl, repeatable)")
}

func (f *specFlags) engine(out io.Writer) *engine.Engine {
	return engine.New(engine.Options{Backend: f.backend, Stack: f.stack, Out: out})
}

// loadSpec decodes the spec in dir (a directory of .hcl files or one file),
// prints its diagnostics and runs the hardening policy: spec errors and unwaived
// policy errors stop the command before anything is applied, and every finding
// and waiver is shown.
func loadSpec(dir string, f *specFlags, errOut io.Writer) (*model.Platform, error) {
	vars := map[string]string{}
	for _, kv := range f.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--var %q: expected NAME=VALUE", kv)
		}
		vars[k] = v
	}
	loader := schemas.NewLoader()
	p, diags := loader.LoadDir(dir, schemas.LoadOptions{Vars: vars, VarFiles: f.varFiles})
	if len(diags) > 0 {
		loader.WriteDiagnostics(errOut, diags)
	}
	if diags.HasErrors() {
		return nil, &exitError{code: 1, err: fmt.Errorf("%s has errors; nothing was applied", dir)}
	}
	report := policy.Check(p, time.Now())
	if err := writePolicyReport(errOut, loader, report, false); err != nil {
		return nil, err
	}
	if report.Blocking() {
		return nil, &exitError{code: 1, err: fmt.Errorf("%s: policy errors block this; fix them or add a waiver with a reason (nothing was applied)", dir)}
	}
	return p, nil
}

// resolveTarget fills the kubeconfig the engine uses for the platform's target,
// and fails early with what to do when the target cannot be reached.
func resolveTarget(ctx context.Context, p *model.Platform) error {
	switch p.Target.Kind {
	case model.TargetLocal:
		st, err := localcluster.New(localcluster.Options{}).Status(ctx)
		if err != nil {
			return err
		}
		if !st.Exists || !st.APIServer.Ready {
			return errors.New("the local cluster is not running: start it with `paddock local up` (see `paddock local status`)")
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
		if abs, err := filepath.Abs(p.Target.Kubeconfig); err == nil {
			p.Target.Kubeconfig = abs
		}
		if _, err := os.Stat(p.Target.Kubeconfig); err != nil {
			return fmt.Errorf("target kubeconfig %s: %w", p.Target.Kubeconfig, err)
		}
	default:
		return fmt.Errorf("target %q cannot be provisioned by this build", p.Target.Kind)
	}
	return nil
}

func specArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}

func newUpCmd() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "up [SPEC]",
		Short: "Provision (or converge) the platform declared in SPEC (a directory of .hcl files, default .)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, args, &f, "up")
		},
	}
	f.register(cmd)
	return cmd
}

func newPreviewCmd() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "preview [SPEC]",
		Short: "Show what `up` would change, touching nothing",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, args, &f, "preview")
		},
	}
	f.register(cmd)
	return cmd
}

func newDestroyCmd() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "destroy [SPEC]",
		Short: "Delete every object of the platform's stack",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, args, &f, "destroy")
		},
	}
	f.register(cmd)
	return cmd
}

func runOp(cmd *cobra.Command, args []string, f *specFlags, op string) error {
	ctx := cmd.Context()
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	dir := specArg(args)
	p, err := loadSpec(dir, f, errOut)
	if err != nil {
		return err
	}
	if err := resolveTarget(ctx, p); err != nil {
		return err
	}
	eng := f.engine(out)
	stack := f.stack
	if stack == "" {
		stack = p.Name
	}
	fmt.Fprintf(out, "paddock %s: platform %q, stack %q, target %s\n", op, p.Name, stack, p.Target.Kind)
	var res *engine.Result
	switch op {
	case "up":
		res, err = eng.Up(ctx, p)
	case "preview":
		res, err = eng.Preview(ctx, p)
	case "destroy":
		res, err = eng.Destroy(ctx, p)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "paddock %s: %s\n", op, res.Summary())
	if op == "up" && len(res.Outputs) > 0 {
		printOutputs(out, res.Outputs)
	}
	return nil
}

func printOutputs(out io.Writer, outputs map[string]any) {
	keys := make([]string, 0, len(outputs))
	for k := range outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(out, "outputs:")
	for _, k := range keys {
		v, _ := json.Marshal(outputs[k])
		fmt.Fprintf(out, "  %-20s %s\n", k, v)
	}
}

func newStatusCmd() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "status [SPEC]",
		Short: "Show the outputs of the platform's last successful update",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadSpec(specArg(args), &f, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			outs, err := f.engine(cmd.OutOrStdout()).Outputs(cmd.Context(), p)
			if err != nil {
				return err
			}
			if len(outs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "stack of platform %q has no outputs: run `paddock up`\n", p.Name)
				return nil
			}
			printOutputs(cmd.OutOrStdout(), outs)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
