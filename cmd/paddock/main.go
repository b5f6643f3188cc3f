// Command paddock declares a hardened AI-agent sandbox platform in HCL and
// provisions it with Pulumi. This file is wiring only: flags, output and exit
// codes; the work happens in schemas, engine, localcluster and friends.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/engine"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Before anything can start a process: the backend's credentials leave
	// the environment every child would inherit, and are masked in output.
	engine.CaptureBackendEnv()
	outputRedaction.addValues(engine.CapturedBackendSecrets())
	stopProfiles := startProfiles()
	root := newRootCmd()
	stdout, stderr := newRedactingWriter(os.Stdout, outputRedaction), newRedactingWriter(os.Stderr, outputRedaction)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	stopProfiles()
	engine.RemoveScratch()
	if err == nil {
		_ = stdout.Flush()
		_ = stderr.Flush()
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(stderr, "paddock:", msg)
	}
	_ = stdout.Flush()
	_ = stderr.Flush()
	os.Exit(code)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "paddock",
		Short:         "Run AI agents on Kubernetes without handing them the cluster",
		Long:          "Paddock declares a hardened agent sandbox platform in HCL and provisions it with Pulumi.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newUpCmd(),
		newPreviewCmd(),
		newDestroyCmd(),
		newDriftCmd(),
		newCancelCmd(),
		newStateCmd(),
		newBenchCmd(),
		newSpecValidateCmd(),
		newFmtCmd(),
		newSchemaCmd(),
		newRenderCmd(),
		newVerifyCmd(),
		newStatusCmd(),
		newVersionCmd(),
		newInitCmd(),
		newLocalCmd(),
		newToolsCmd(),
	)
	return root
}
