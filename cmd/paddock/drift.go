package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/engine"
)

func newDriftCmd() *cobra.Command {
	var (
		f        specFlags
		format   string
		noSweep  bool
		strict   bool
		all      bool
		parallel int
	)
	cmd := &cobra.Command{
		Use:   "drift [SPEC]",
		Short: "Compare the live platform with its stack and report every difference (changes nothing)",
		Long: `Drift compares the live cluster with the stack (the state is not written) and
reports each resource of the stack that differs: the changed field paths with the
declared and the live value, or that the object was deleted. When the spec is what the
stack last applied, it reads the live objects directly (one LIST per kind, a
server-side-apply dry-run for each suspect); otherwise, or with --full, it refreshes
the stack in preview mode through the Pulumi engine. It then
sweeps the cluster for objects outside the stack (or fields of its objects Paddock does
not set) that weaken the platform, each judged by its effect against what the spec
allows: bindings that give a tenant identity more than the spec does (S01), network
policies (and Cilium's and GKE's) that let through traffic the spec does not (S02),
pods in tenant namespaces without an allowed runtime class (S04), objects labelled as
the platform's that no stack holds (S05), bindings of tenant identities to roles that
do not exist (S06), guardrails no longer enforced on their tenant as declared (S07),
claims or sandboxes that outlive their end or that nothing ends in time (S08), and
mutating webhooks that can rewrite what the platform guards (S09).

` + "`paddock up`" + ` repairs what the stack owns; objects outside it are reported for a person.

Exit status: 0 no drift, 2 drift, 1 the check could not run (with --strict, also
when fields outside the spec could not be compared).
Formats: text (default), json, markdown (for CI job summaries and PR comments).`,
		Example: `  paddock drift examples/local
  paddock drift --stack team-a --format markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "markdown":
			default:
				return fmt.Errorf("--format %q: use text, json or markdown", format)
			}
			ctx := cmd.Context()
			if all {
				if strict {
					return errors.New("--strict judges one stack's report; with --all, run drift --strict per stack")
				}
				return runFleetDrift(cmd, f, args, format, noSweep, parallel)
			}
			start := time.Now()
			l, err := f.load(ctx, args, cmd.ErrOrStderr(), cmd.ErrOrStderr(), false, true)
			if err != nil {
				return err
			}
			rep, err := driftOf(ctx, l, noSweep, nil)
			if err != nil {
				return err
			}
			rep.Duration = time.Since(start)
			rep.Sort()
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				err = rep.WriteJSON(out)
			case "markdown":
				err = rep.WriteMarkdown(out)
			default:
				err = rep.WriteText(out)
			}
			if err != nil {
				return err
			}
			return driftExit(rep, strict)
		},
	}
	f.register(cmd)
	f.registerFull(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output: text, json or markdown")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when fields outside the spec could not be compared (a dead run record or an unreadable state left only Pulumi's preview of declared fields): for CI, where that is no clean bill")
	cmd.Flags().BoolVar(&noSweep, "no-sweep", false, "compare the stack only; skip the sweep of objects outside it")
	cmd.Flags().BoolVar(&all, "all", false, "check every stack with a config file in the project (stacks/Pulumi.<stack>.yaml) and print one summary")
	cmd.Flags().IntVar(&parallel, "parallel", 4, "with --all: how many stacks to check at once")
	return cmd
}

// driftExit is drift's exit: 2 when anything drifted, and with strict 1
// when fields outside the spec could not be compared (then an empty report
// proves nothing, and a drifted one may miss more).
func driftExit(rep *drift.Report, strict bool) error {
	if strict && rep.Partial != "" {
		return &exitError{code: 1, err: fmt.Errorf("drift --strict: only the fields the spec declares were compared (%s), so the report is no proof of a clean cluster; fix the cause and run drift again", rep.Partial)}
	}
	if rep.Drifted() {
		return &exitError{code: 2, err: errors.New("")}
	}
	return nil
}

// driftOf is drift for one loaded stack: the stack compared with the cluster,
// then (unless noSweep) the sweep of what lies outside it. inv, when not nil,
// holds the stacks' inventories of one drift --all (each read once).
func driftOf(ctx context.Context, l *loaded, noSweep bool, inv *inventories) (*drift.Report, error) {
	rep, err := l.eng.Drift(ctx, l.p)
	if err != nil {
		return nil, err
	}
	if !noSweep {
		sweepStart := time.Now()
		// A sweep lists every resource type, and, below 50 tenants or on a
		// cluster too big to list whole, three kinds in every tenant's
		// namespace: at 50 requests a second those 4,300 requests at 1,000
		// tenants waited on the client's own limit for 48 s.
		cfg, err := restConfig(l.p, sweepQPS)
		if err != nil {
			return nil, err
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		// The dynamic client reads Cilium's and GKE's policies.
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		if rep.Unmanaged, err = drift.Sweep(ctx, l.p, kube, dyn); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
		// S05: objects labelled as the platform's that its stack does not hold.
		if inStack, err := inv.of(rep.Stack, l.eng.Inventory); err == nil && inStack != nil {
			inStack = append(inStack, siblingObjects(l, rep.Stack, inv)...)
			meta, err := metadata.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			labelled, err := drift.Labelled(ctx, kube.Discovery(), meta, l.p.Name)
			if err != nil {
				return nil, fmt.Errorf("sweep: %w", err)
			}
			orphans, _ := drift.Orphans(labelled, inStack)
			rep.Unmanaged = append(rep.Unmanaged, orphans...)
		}
		rep.Sweep = time.Since(sweepStart)
	}
	return rep, nil
}

// siblingObjects are the objects the project's other stacks hold (each
// stack file of l's project, read from the same backend): stacks of one
// platform on one cluster share its label, so one stack's objects are not
// another's orphans. A stack the backend does not hold adds nothing. inv
// (nil: none) reads each stack once for all the stacks of a drift --all.
func siblingObjects(l *loaded, self string, inv *inventories) []drift.ObjectRef {
	if l.projectDir == "" {
		return nil
	}
	stacks, err := project.Stacks(l.projectDir)
	if err != nil {
		return nil
	}
	var out []drift.ObjectRef
	for _, name := range stacks {
		if name == self {
			continue
		}
		if objs, err := inv.of(name, l.eng.Inventory); err == nil {
			out = append(out, objs...)
		}
	}
	return out
}

// inventories are the objects each stack's state holds, read once for all
// the stacks of one drift --all: every stack's S05 counts what the project's
// other stacks hold, and read by each stack, N stacks read N × (N-1)
// checkpoints (at 50 stacks, 48% of the command's CPU). The stacks of one
// drift --all share the backend, so a stack's name names its state. A nil
// *inventories reads every time.
type inventories struct {
	mu sync.Mutex
	m  map[string]*inventory
}

type inventory struct {
	once sync.Once
	objs []drift.ObjectRef
	err  error
}

// of is stack name's objects, read with read the first time it is asked
// for; the slice is clipped, so appending to it never writes into what
// another stack reads.
func (c *inventories) of(name string, read func(string) ([]drift.ObjectRef, []engine.PendingOperation, error)) ([]drift.ObjectRef, error) {
	if c == nil {
		objs, _, err := read(name)
		return objs, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*inventory{}
	}
	e := c.m[name]
	if e == nil {
		e = &inventory{}
		c.m[name] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.objs, _, e.err = read(name) })
	return slices.Clip(e.objs), e.err
}
