package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/drift"
)

// runFleetDrift is `drift --all`: every stack with a config file in the
// project, `parallel` at once, one summary and one exit status. A stack that
// cannot be checked is an error of that stack, never of the others.
func runFleetDrift(cmd *cobra.Command, f specFlags, args []string, format string, noSweep bool, parallel int) error {
	switch {
	case len(args) > 0:
		return errors.New("--all checks the stacks of the project, each with its own spec: drop the SPEC argument")
	case f.stack != "":
		return errors.New("--all checks every stack of the project: drop --stack")
	case len(f.vars) > 0 || len(f.varFiles) > 0:
		return errors.New("--all takes each stack's variables from its config file: drop --var/--var-file")
	case parallel < 1:
		return fmt.Errorf("--parallel %d: check at least one stack at a time", parallel)
	}
	start := f.projectDir
	if start == "" {
		start = "."
	}
	dir, err := project.Find(start)
	if err != nil {
		return err
	}
	stacks, err := project.Stacks(dir)
	if err != nil {
		return err
	}
	if len(stacks) == 0 {
		return fmt.Errorf("the project in %s has no stack config files (Pulumi.<stack>.yaml): nothing to check", dir)
	}
	ctx := cmd.Context()
	began := time.Now()
	fleet := &drift.Fleet{Parallel: min(parallel, len(stacks)), Stacks: make([]drift.FleetStack, len(stacks))}
	var logMu sync.Mutex
	inv := &inventories{}
	g := errgroup.Group{}
	g.SetLimit(parallel)
	for i, name := range stacks {
		g.Go(func() error {
			one := f
			one.stack, one.projectDir = name, dir
			var log bytes.Buffer
			t0 := time.Now()
			res := drift.FleetStack{Stack: name}
			if l, err := one.load(ctx, nil, &log, &log, false, true); err != nil {
				res.Error = err.Error()
			} else if rep, err := driftOf(ctx, l, noSweep, inv); err != nil {
				res.Error = err.Error()
			} else {
				rep.Duration = time.Since(t0)
				rep.Sort()
				res.Report = rep
			}
			res.Duration = time.Since(t0)
			fleet.Stacks[i] = res
			// Each stack's own messages, kept together and named.
			logMu.Lock()
			for _, line := range strings.Split(strings.TrimRight(log.String(), "\n"), "\n") {
				if line != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "[%s] %s\n", name, line)
				}
			}
			logMu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	fleet.Duration = time.Since(began)
	fleet.Sort()
	out := cmd.OutOrStdout()
	switch format {
	case "json":
		err = fleet.WriteJSON(out)
	case "markdown":
		err = fleet.WriteMarkdown(out)
	default:
		err = fleet.WriteText(out)
	}
	if err != nil {
		return err
	}
	if code := fleet.ExitCode(); code != 0 {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}
