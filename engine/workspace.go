// Package engine runs a platform's stack through the Pulumi Automation API with
// an inline program and the pinned CLI Paddock built. It owns the backend (a
// local file state by default), the secrets passphrase and progress reporting;
// it knows the components only through package program.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/pins"
	"github.com/paddock-platform/paddock/program"
)

// ProjectName is the Pulumi project every Paddock stack belongs to.
const ProjectName = "paddock"

// Options configure where state lives and how progress is reported.
type Options struct {
	// Backend is a Pulumi backend URL; empty means file://$PADDOCK_HOME/state.
	Backend string
	// Stack is the stack name; empty means the platform's name.
	Stack string
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// Engine runs stacks for platforms.
type Engine struct {
	opts Options
}

// New returns an engine with opts.
func New(opts Options) *Engine {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	return &Engine{opts: opts}
}

func (e *Engine) backendURL() (string, error) {
	if e.opts.Backend != "" {
		return e.opts.Backend, nil
	}
	dir := paths.StateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating state directory: %w", err)
	}
	return "file://" + dir, nil
}

// passphraseEnv returns the environment that gives the engine its secrets
// passphrase: the user's own (PULUMI_CONFIG_PASSPHRASE or _FILE) when set, else a
// passphrase Paddock generated once and keeps at $PADDOCK_HOME/secrets/passphrase (0600).
func passphraseEnv() (map[string]string, error) {
	if v, ok := os.LookupEnv("PULUMI_CONFIG_PASSPHRASE"); ok {
		return map[string]string{"PULUMI_CONFIG_PASSPHRASE": v}, nil
	}
	if v := os.Getenv("PULUMI_CONFIG_PASSPHRASE_FILE"); v != "" {
		return map[string]string{"PULUMI_CONFIG_PASSPHRASE_FILE": v}, nil
	}
	file := filepath.Join(paths.SecretsDir(), "passphrase")
	if err := ensurePassphrase(file); err != nil {
		return nil, err
	}
	return map[string]string{"PULUMI_CONFIG_PASSPHRASE_FILE": file}, nil
}

func ensurePassphrase(file string) error {
	if st, err := os.Stat(file); err == nil {
		if st.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("%s is readable by others (mode %v): run `chmod 600 %s`", file, st.Mode().Perm(), file)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil // another paddock created it first
		}
		return fmt.Errorf("creating state passphrase: %w", err)
	}
	defer f.Close()
	_, err = f.WriteString(base64.RawURLEncoding.EncodeToString(buf) + "\n")
	return err
}

// checkTools fails with a clear message when `make tools` has not been run.
func checkTools() error {
	if _, err := paths.Tool("pulumi"); err != nil {
		return err
	}
	plugin := filepath.Join(paths.PulumiHome(), "plugins", "resource-kubernetes-v"+pins.PulumiKubernetes)
	if _, err := os.Stat(plugin); err != nil {
		return fmt.Errorf("the kubernetes provider plugin v%s is not installed in %s: run `make tools`", pins.PulumiKubernetes, paths.PulumiHome())
	}
	return nil
}

func (e *Engine) stackName(p *model.Platform) string {
	if e.opts.Stack != "" {
		return e.opts.Stack
	}
	return p.Name
}

// stack selects (creating if needed) the platform's stack with the inline program.
func (e *Engine) stack(ctx context.Context, p *model.Platform) (auto.Stack, error) {
	if err := checkTools(); err != nil {
		return auto.Stack{}, err
	}
	backend, err := e.backendURL()
	if err != nil {
		return auto.Stack{}, err
	}
	env, err := passphraseEnv()
	if err != nil {
		return auto.Stack{}, err
	}
	env["PULUMI_HOME"] = paths.PulumiHome()
	env["PULUMI_BACKEND_URL"] = backend
	env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
	env["PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK"] = "true"
	// Never reach for a plugin or language host we did not build.
	env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
	// Use the provider installed in PULUMI_HOME, not the copy next to the CLI.
	env["PULUMI_IGNORE_AMBIENT_PLUGINS"] = "true"

	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: paths.Home(), SkipVersionCheck: true})
	if err != nil {
		return auto.Stack{}, fmt.Errorf("pulumi CLI: %w", err)
	}
	proj := workspace.Project{
		Name:    tokens.PackageName(ProjectName),
		Runtime: workspace.NewProjectRuntimeInfo("go", nil),
		Backend: &workspace.ProjectBackend{URL: backend},
	}
	s, err := auto.UpsertStackInlineSource(ctx, e.stackName(p), ProjectName, program.New(p),
		auto.Pulumi(cmd),
		auto.Project(proj),
		auto.EnvVars(env),
		auto.PulumiHome(paths.PulumiHome()),
		auto.SecretsProvider("passphrase"),
	)
	if err != nil {
		return auto.Stack{}, fmt.Errorf("selecting stack %q in %s: %w", e.stackName(p), backend, err)
	}
	return s, nil
}
