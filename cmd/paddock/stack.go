package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/engine"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

// specFlags select a spec and its stack.
type specFlags struct {
	stack      string
	backend    string
	vars       []string
	varFiles   []string
	projectDir string
	lockWait   time.Duration
	// checkpoints is "final" or "every-step" (engine.Options.Checkpoints).
	checkpoints string
	// full forces Pulumi's own engine: up and drift refresh and diff every
	// resource, destroy runs Pulumi's destroy (engine.Options.Full).
	full bool
	// fullPolicyReport shows the whole policy report, for the commands that
	// decide from it (up, preview); the others show one line (policyReport).
	fullPolicyReport bool
	// poolWait is up's --pool-wait (engine.Options.PoolWait; 0 here means
	// report only).
	poolWait time.Duration
	// deleteShared lets destroy delete objects other stacks of the project
	// also hold (sharedWithSiblings).
	deleteShared bool
}

func (f *specFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.stack, "stack", "", "stack name (default: the platform's name); a stack with a config file (stacks/Pulumi.<stack>.yaml) takes its spec and variables from it")
	cmd.Flags().StringVar(&f.backend, "backend", "", "Pulumi backend URL: file://, postgres://, s3://, gs://, azblob:// or https://api.pulumi.com (the fast paths read file://, postgres:// and s3://; others fall back to refresh) (default: the project's backend.url, $PULUMI_BACKEND_URL, else file://$PADDOCK_HOME/state)")
	cmd.PreRunE = func(*cobra.Command, []string) error { return backendFlagSafe(f.backend) }
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a spec variable, NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&f.varFiles, "var-file", nil, "read variables from a vars file (*.pvars.hcl, repeatable)")
	cmd.Flags().StringVar(&f.projectDir, "project-dir", "", "the Pulumi project (Pulumi.yaml) whose stack files --stack reads (default: the nearest one above the current directory)")
}

// backendFlagSafe refuses a --backend URL that carries a credential: a
// command line is readable by every process on the machine
// (/proc/<pid>/cmdline) and lands in shell histories and CI logs.
func backendFlagSafe(backend string) error {
	if backend == "" || !engine.URLHoldsSecret(backend) {
		return nil
	}
	return &exitError{code: 2, err: errors.New("--backend holds a password, secret or token, which every process on this machine can read in /proc/<pid>/cmdline: " +
		"drop --backend and set PULUMI_BACKEND_URL in the environment instead")}
}

// registerLockWait adds --lock-wait to the commands that update a stack.
func (f *specFlags) registerLockWait(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.lockWait, "lock-wait", 0, "when another update holds the stack, wait this long for it (e.g. 10m) instead of failing")
	cmd.Flags().StringVar(&f.checkpoints, "checkpoints", os.Getenv(engine.CheckpointsEnv), "when the state is saved: final (default: once at the end, linear in the platform's size; a run that dies midway is found in the run journal, and the next up adopts what it created that the spec declares and deletes the rest) or every-step (after each resource, as Pulumi does: quadratic on the file backend) [$"+engine.CheckpointsEnv+"]")
}

// registerFull adds --full to the commands with a fast path (up, drift).
func (f *specFlags) registerFull(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.full, "full", false, "always run the Pulumi engine (refresh and diff every resource) instead of comparing the live cluster directly when the spec has not changed")
}

func (f *specFlags) engine(out io.Writer) *engine.Engine {
	poolWait := f.poolWait
	if poolWait == 0 {
		poolWait = -1 // report only; the engine reads 0 as its default
	}
	return engine.New(engine.Options{Backend: f.backend, Stack: f.stack, Out: out, LockWait: f.lockWait, Checkpoints: f.checkpoints, Full: f.full, PoolWait: poolWait})
}

// loadSpec decodes the spec in dir (a directory of .hcl files or one file),
// prints its diagnostics and runs the hardening policy: spec errors and unwaived
// policy errors stop the command before anything is applied and are shown in
// full, and so is every finding and waiver where f asks for the whole report
// (specload.Load, which the Pulumi program shares).
func loadSpec(dir string, f *specFlags, errOut io.Writer) (*model.Platform, error) {
	vars, err := parseVarFlags(f.vars)
	if err != nil {
		return nil, err
	}
	p, err := specload.Load(dir, specload.Options{Vars: vars, VarFiles: f.varFiles, Report: f.policyReport(dir, false)}, errOut)
	if err != nil {
		return nil, specExit(err)
	}
	outputRedaction.add(p)
	return p, nil
}

// resolveTarget fills the kubeconfig the engine uses for the platform's target,
// and fails early with what to do when the target cannot be reached.
func resolveTarget(ctx context.Context, p *model.Platform) error {
	return targets.Resolve(ctx, p)
}

func specArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}

func newUpCmd() *cobra.Command {
	f := specFlags{fullPolicyReport: true}
	cmd := &cobra.Command{
		Use:   "up [SPEC]",
		Short: "Provision (or converge) the platform declared in SPEC (a directory of .hcl files, default .)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, args, &f, "up")
		},
	}
	f.register(cmd)
	f.registerLockWait(cmd)
	f.registerFull(cmd)
	cmd.Flags().DurationVar(&f.poolWait, "pool-wait", engine.DefaultPoolWait, "after a template change, how long to wait for each warm pool of update strategy Recreate to hold only sandboxes of the new template, ready (0: do not wait, only report the stale ones)")
	return cmd
}

func newPreviewCmd() *cobra.Command {
	f := specFlags{fullPolicyReport: true}
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
	f.registerLockWait(cmd)
	cmd.Flags().BoolVar(&f.deleteShared, "delete-shared", false, "delete also the objects other stacks of the project hold too (the cluster's Agent Sandbox release, runtime classes), which destroy otherwise leaves: those stacks' sandboxes go with them")
	cmd.Flags().BoolVar(&f.full, "full", false, "go through Pulumi's destroy (a refresh, then one deletion per resource along the dependency graph) instead of deleting the objects directly, namespaces whole, and emptying the state once they are gone")
	return cmd
}

func runOp(cmd *cobra.Command, args []string, f *specFlags, op string) error {
	ctx := cmd.Context()
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	l, err := f.load(ctx, args, out, errOut, op != "destroy", true)
	if err != nil {
		return err
	}
	p, eng, stack := l.p, l.eng, l.stack
	if op != "destroy" {
		// A sandbox whose image cannot be had would wait forever: refuse
		// before anything is applied. Destroy must work whatever the images.
		if err := targets.CheckLocalImages(ctx, p); err != nil {
			return err
		}
	}
	if op == "destroy" && !f.deleteShared {
		if shared, holders := sharedWithSiblings(l); len(shared) > 0 {
			fmt.Fprintf(out, "paddock destroy: %d objects are held by other stacks of the project too (%s): they stay (--delete-shared deletes them, and those stacks' sandboxes with them)\n", len(shared), strings.Join(holders, ", "))
			eng.KeepShared(shared)
		}
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

// sharedWithSiblings is what the stack holds that other stacks of the
// project hold too, and which stacks: stacks of one platform on one cluster
// all declare its Agent Sandbox release and runtime classes, and deleting
// them (CRDs and all) would delete every stack's sandboxes.
func sharedWithSiblings(l *loaded) (shared []drift.ObjectRef, holders []string) {
	if l.projectDir == "" {
		return nil, nil
	}
	mine, _, err := l.eng.Inventory(l.stack)
	if err != nil || len(mine) == 0 {
		return nil, nil
	}
	stacks, err := project.Stacks(l.projectDir)
	if err != nil {
		return nil, nil
	}
	byOthers := map[string]bool{}
	for _, name := range stacks {
		if name == l.stack {
			continue
		}
		objs, _, err := l.eng.Inventory(name)
		if err != nil || len(objs) == 0 {
			continue
		}
		holders = append(holders, name)
		for _, o := range objs {
			byOthers[o.APIVersion+" "+o.String()] = true
		}
	}
	for _, o := range mine {
		if byOthers[o.APIVersion+" "+o.String()] {
			shared = append(shared, o)
		}
	}
	return shared, holders
}
