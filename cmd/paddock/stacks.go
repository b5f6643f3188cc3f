package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/engine"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

// loaded is what a stack command works on: the platform and the engine that
// runs its stack.
type loaded struct {
	p     *model.Platform
	eng   *engine.Engine
	stack string
	// projectDir is set when the stack's config comes from a stack file.
	projectDir string
}

// stackMode reports the project directory and stack file when --stack names
// a stack with a config file (Pulumi.<stack>.yaml in the stackConfigDir of
// the project at --project-dir, or of the nearest Pulumi.yaml above the
// current directory). "" means: the SPEC argument and --var flags.
func (f *specFlags) stackMode() (dir, file string, err error) {
	if f.stack == "" {
		if f.projectDir != "" {
			return "", "", errors.New("--project-dir needs --stack: it selects a stack's config file in the project")
		}
		return "", "", nil
	}
	start := f.projectDir
	if start == "" {
		start = "."
	}
	dir, file, err = project.StackFileFor(start, f.stack)
	if errors.Is(err, project.ErrNoStackFile) {
		if f.projectDir != "" {
			return "", "", fmt.Errorf("--stack %s: %w", f.stack, err)
		}
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if f.projectDir != "" && dir != mustAbs(f.projectDir) {
		// A Pulumi.yaml found above --project-dir is not the one asked for.
		return "", "", fmt.Errorf("--project-dir %s holds no %s", f.projectDir, project.ProjectFile)
	}
	return dir, file, nil
}

func mustAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// load resolves the platform a stack command works on. With --stack naming a
// stack that has a stack file, the spec, its variables (secrets decrypted)
// and the target come from that file — the same file and the same program
// (project.Program) `pulumi up` uses; SPEC, if given, must be the spec it
// names, and --var/--var-file are refused (one source of truth). Otherwise
// the spec is SPEC with --var and --var-file. create makes a missing stack;
// resolve finds the target's kubeconfig.
func (f *specFlags) load(ctx context.Context, args []string, out, errOut io.Writer, create, resolve bool) (*loaded, error) {
	dir, file, err := f.stackMode()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		p, err := loadSpec(specArg(args), f, errOut)
		if err != nil {
			return nil, err
		}
		if resolve {
			if err := resolveTarget(ctx, p); err != nil {
				return nil, err
			}
		}
		stack := f.stack
		if stack == "" {
			stack = p.Name
		}
		return &loaded{p: p, eng: f.engine(out), stack: stack}, nil
	}
	if len(f.vars) > 0 || len(f.varFiles) > 0 {
		return nil, fmt.Errorf("stack %s takes its variables from %s: set them there (`pulumi config set --path 'paddock:vars.NAME' VALUE`), not with --var/--var-file", f.stack, file)
	}
	eng := engine.New(engine.Options{
		Backend: f.backend, Stack: f.stack, Out: out, ProjectDir: dir, LockWait: f.lockWait, Checkpoints: f.checkpoints, Full: f.full,
		// The inline program reads the stack's config itself, exactly as under
		// `pulumi up`; the spec was checked (and its report printed) below.
		Program: project.ProgramAt(dir, io.Discard),
	})
	fmt.Fprintf(errOut, "paddock: stack %s takes its spec and variables from %s\n", f.stack, file)
	values, err := eng.StackConfig(ctx, f.stack, create)
	if err != nil {
		return nil, err
	}
	in := map[string]project.Value{}
	for k, v := range values {
		in[k] = project.Value{Value: v.Value, Secret: v.Secret}
	}
	cfg, err := project.Parse(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(args) > 0 && mustAbs(args[0]) != mustAbs(cfg.SpecDir(dir)) {
		return nil, fmt.Errorf("stack %s provisions %s (%s in %s), not %s: drop the SPEC argument", f.stack, cfg.Spec, project.KeySpec, file, args[0])
	}
	specOpts := cfg.SpecOptions(dir)
	specOpts.Report = f.policyReport(cfg.SpecDir(dir), true)
	p, err := specload.Load(cfg.SpecDir(dir), specOpts, errOut)
	if err != nil {
		return nil, specExit(err)
	}
	outputRedaction.add(p)
	if resolve {
		if err := targets.Resolve(ctx, p); err != nil {
			return nil, err
		}
	}
	return &loaded{p: p, eng: eng, stack: f.stack, projectDir: dir}, nil
}

// specExit gives spec and policy errors exit status 1 with their message.
func specExit(err error) error {
	var se *specload.Error
	if errors.As(err, &se) {
		return &exitError{code: 1, err: err}
	}
	return err
}

func newCancelCmd() *cobra.Command {
	var (
		f     specFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "cancel [SPEC]",
		Short: "Remove the lock an interrupted update left on the stack",
		Long: "An update locks its stack, so that a second `paddock up` or `pulumi up` on the same\n" +
			"stack fails (or, with --lock-wait, waits) instead of corrupting the state. When the\n" +
			"process holding the lock died, the lock stays: cancel removes it. It refuses while\n" +
			"the holder is still running on this machine, unless --force.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			stack := f.stack
			if stack == "" {
				p, err := loadSpec(specArg(args), &f, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				stack = p.Name
			}
			dir, _, err := f.stackMode()
			if err != nil {
				return err
			}
			eng := engine.New(engine.Options{Backend: f.backend, Stack: stack, Out: out, ProjectDir: dir})
			locks, err := eng.Cancel(ctx, stack, force)
			if err != nil {
				return err
			}
			if len(locks) == 0 {
				fmt.Fprintf(out, "paddock cancel: stack %q: lock removed (if there was one)\n", stack)
				return nil
			}
			for _, l := range locks {
				fmt.Fprintf(out, "paddock cancel: stack %q: removed the lock of %s\n", stack, l)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove the lock even while its holder still runs on this machine")
	return cmd
}
