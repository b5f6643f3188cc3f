// Package engine runs a platform's stack through the Pulumi Automation API with
// an inline program and the pinned CLI Paddock built. It owns the backend (a
// local file state by default; what Paddock reads there itself is package
// state's), the secrets passphrase and progress reporting; it knows the
// components only through package program.
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
	"strconv"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
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
	// ProjectDir is a Pulumi project directory (Pulumi.yaml and the stack
	// config files under its stackConfigDir): the stack runs there, reading
	// its config from its Pulumi.<stack>.yaml as `pulumi up` would. Empty
	// means a throwaway workspace holding only the inline program.
	ProjectDir string
	// Program replaces the platform's program (program.New); the project's
	// program (project.Program) reads the stack's config itself.
	Program pulumi.RunFunc
	// LockWait is how long Up and Destroy wait for another update of the same
	// stack to finish before failing; zero retries briefly, then fails.
	LockWait time.Duration
	// Parallel is how many resource operations run at once (0 =
	// DefaultParallel). Kubernetes operations wait on the API server, not on
	// this machine's CPUs, so Pulumi's default (4 per CPU) leaves most of
	// their time queued.
	Parallel int
	// Checkpoints says when Up and Destroy save the state: CheckpointsFinal
	// once at the end (the default: "" means $PADDOCK_CHECKPOINTS, else
	// final), or CheckpointsEveryStep after every resource operation, as
	// Pulumi does. The file backend rewrites the whole state each time, so
	// every-step costs time quadratic in the platform's size; final is
	// linear. A run killed midway leaves what it created out of the state:
	// each run keeps a record in the run journal (journal.go) until it
	// succeeds, and the next up after one that did not adopts what it
	// created that the spec declares (creates are server-side applies) and
	// deletes the rest (prune.go); the next destroy deletes all of it.
	Checkpoints string
	// Full makes Up and Drift always go through the Pulumi engine, never the
	// fast comparison of the live cluster (fast.go), and Destroy through
	// Pulumi's destroy instead of deleting the objects directly (destroy.go).
	Full bool
	// PoolWait is how long Up waits, after it applied the platform, for warm
	// pools of update strategy Recreate to hold only sandboxes of their
	// current template (pools.go): zero means DefaultPoolWait, below zero
	// not at all (stale sandboxes are only reported).
	PoolWait time.Duration
}

// Checkpoint modes, and the environment variable that sets the default.
const (
	CheckpointsEveryStep = "every-step"
	CheckpointsFinal     = "final"
	CheckpointsEnv       = "PADDOCK_CHECKPOINTS"
)

// checkpoints is the checkpoint mode in force: Options.Checkpoints, else
// $PADDOCK_CHECKPOINTS, else final.
func (e *Engine) checkpoints() string {
	if e.opts.Checkpoints != "" {
		return e.opts.Checkpoints
	}
	if v := os.Getenv(CheckpointsEnv); v != "" {
		return v
	}
	return CheckpointsFinal
}

// providerClientEnv raises the kubernetes provider's client rate limit to
// the engine's own (converge.ClusterQPS) unless the user set it. At the
// provider's default of 50 requests a second every create and update queued
// on the provider's client, and Pulumi's parallel slots sat idle behind it:
// a 100-tenant create took 52 s at that limit, 34 s at this one. An environment
// variable, not a provider input, so no stack's state changes with it.
func providerClientEnv() map[string]string {
	env := map[string]string{}
	if _, set := os.LookupEnv("PULUMI_K8S_CLIENT_QPS"); !set {
		env["PULUMI_K8S_CLIENT_QPS"] = strconv.Itoa(converge.ClusterQPS)
	}
	if _, set := os.LookupEnv("PULUMI_K8S_CLIENT_BURST"); !set {
		env["PULUMI_K8S_CLIENT_BURST"] = strconv.Itoa(2 * converge.ClusterQPS)
	}
	return env
}

// DefaultParallel is Options.Parallel's default.
const DefaultParallel = 32

func (e *Engine) parallel() int {
	if e.opts.Parallel > 0 {
		return e.opts.Parallel
	}
	return DefaultParallel
}

// Engine runs stacks for platforms.
type Engine struct {
	opts Options
	// shared are the objects other stacks also hold, which destroy leaves
	// in the cluster (KeepShared).
	shared map[string]bool
	opened map[string]auto.Stack
	stores map[string]state.Store // by backend URL (store)
	// pgpass holds a PostgreSQL backend's password for the Pulumi CLI
	// (backendsecret.go), from the first stack opened until Close.
	pgpass *passfile
}

// New returns an engine with opts.
func New(opts Options) *Engine {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	return &Engine{opts: opts}
}

// backendURL is where the stack's state lives: --backend, else the project's
// backend.url (Pulumi.yaml), else PULUMI_BACKEND_URL, else the file backend
// under $PADDOCK_HOME/state.
func (e *Engine) backendURL() (string, error) {
	projectURL := ""
	if e.opts.ProjectDir != "" {
		proj, err := workspace.LoadProject(filepath.Join(e.opts.ProjectDir, "Pulumi.yaml"))
		if err != nil {
			return "", fmt.Errorf("reading the project in %s: %w", e.opts.ProjectDir, err)
		}
		if proj.Backend != nil {
			projectURL = proj.Backend.URL
		}
		// The Pulumi CLI reads backend.url from the file itself, past any
		// URL Paddock hands it, and would pass the credential to its plugins.
		if URLHoldsSecret(projectURL) {
			return "", fmt.Errorf("backend.url in %s holds a credential: the Pulumi CLI reads it from there and hands it to every plugin it starts, and the file is easily committed; write the URL without it and set PGPASSWORD (postgres://, which Paddock passes to the CLI in memory) or the backend SDK's own variables", filepath.Join(e.opts.ProjectDir, "Pulumi.yaml"))
		}
	}
	switch {
	case e.opts.Backend != "" && projectURL != "" && e.opts.Backend != projectURL:
		return "", fmt.Errorf("--backend %s contradicts backend.url %s in %s/Pulumi.yaml, which Pulumi always uses", e.opts.Backend, projectURL, e.opts.ProjectDir)
	case e.opts.Backend != "":
		return e.opts.Backend, nil
	case projectURL != "":
		return projectURL, nil
	case envBackendURL() != "":
		return envBackendURL(), nil
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

// stack selects (creating if needed) the platform's stack with its program.
func (e *Engine) stack(ctx context.Context, p *model.Platform) (auto.Stack, error) {
	return e.open(ctx, e.stackName(p), e.programFor(p), true)
}

func (e *Engine) programFor(p *model.Platform) pulumi.RunFunc {
	if e.opts.Program != nil {
		return e.opts.Program
	}
	return program.New(p)
}

// open selects the stack called name with program prog, creating it first
// when create is set (else a missing stack is an error that says so). An
// engine opens each stack once and reuses it.
func (e *Engine) open(ctx context.Context, name string, prog pulumi.RunFunc, create bool) (auto.Stack, error) {
	if s, ok := e.opened[name]; ok {
		s.Workspace().SetProgram(prog)
		return s, nil
	}
	if err := checkTools(); err != nil {
		return auto.Stack{}, err
	}
	if st, err := e.store(); err == nil {
		if fs, ok := st.(*filestate.Store); ok {
			for _, p := range fs.RepairSidecars() {
				fmt.Fprintf(e.opts.Out, "state: removed %s, a metadata file a killed run left half written (it held only its blob's content type and checksum; the blob is whole)\n", p)
			}
		}
	}
	// A corrupt state stops every operation here, before Pulumi reads it.
	if _, err := e.checkState(name); err != nil {
		var corrupt *CorruptStateError
		if errors.As(err, &corrupt) {
			return auto.Stack{}, err
		}
	}
	backend, err := e.backendURL()
	if err != nil {
		return auto.Stack{}, err
	}
	env, err := passphraseEnv()
	if err != nil {
		return auto.Stack{}, err
	}
	tmp, err := scratchDir()
	if err != nil {
		return auto.Stack{}, err
	}
	env["TMPDIR"] = tmp
	env["PULUMI_HOME"] = paths.PulumiHome()
	pulumiURL, password, err := pulumiBackend(backend)
	if err != nil {
		return auto.Stack{}, err
	}
	env["PULUMI_BACKEND_URL"] = pulumiURL
	if password != "" {
		pf, err := e.passfile(password)
		if err != nil {
			return auto.Stack{}, err
		}
		env["PGPASSFILE"] = pf.path
	}
	env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
	env["PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK"] = "true"
	// Never reach for a plugin or language host we did not build.
	env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
	// Use the provider installed in PULUMI_HOME, not the copy next to the CLI.
	env["PULUMI_IGNORE_AMBIENT_PLUGINS"] = "true"
	// Paddock owns the fields it declares: when someone took one over out of
	// band (kubectl edit, patch, set image), up takes it back instead of
	// failing on the server-side apply conflict, and the drift preview shows
	// the change instead of the conflict. Set it to false to keep conflicts.
	if _, set := os.LookupEnv("PULUMI_K8S_ENABLE_PATCH_FORCE"); !set {
		env["PULUMI_K8S_ENABLE_PATCH_FORCE"] = "true"
	}
	for k, v := range providerClientEnv() {
		env[k] = v
	}

	switch mode := e.checkpoints(); mode {
	case CheckpointsEveryStep:
	case CheckpointsFinal:
		env["PULUMI_SKIP_CHECKPOINTS"] = "true"
	default:
		return auto.Stack{}, fmt.Errorf("checkpoints %q: use %s (the default) or %s", mode, CheckpointsFinal, CheckpointsEveryStep)
	}

	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: paths.Home(), SkipVersionCheck: true})
	if err != nil {
		return auto.Stack{}, fmt.Errorf("pulumi CLI: %w", err)
	}
	opts := []auto.LocalWorkspaceOption{
		auto.Pulumi(e.fenceCLI(cmd, name)), // fence.go: a lapsed run kills it; staging.go
		auto.EnvVars(env),
		auto.PulumiHome(paths.PulumiHome()),
		auto.SecretsProvider(e.secretsProvider(name)),
	}
	projectName := ProjectName
	if e.opts.ProjectDir != "" {
		// The project's own Pulumi.yaml and stack files: never rewritten.
		proj, err := workspace.LoadProject(filepath.Join(e.opts.ProjectDir, "Pulumi.yaml"))
		if err != nil {
			return auto.Stack{}, err
		}
		projectName = string(proj.Name)
		opts = append(opts, auto.WorkDir(e.opts.ProjectDir))
	} else {
		// The inline program's workspace: in the scratch directory, so it
		// goes with it.
		opts = append(opts, auto.WorkDir(tmp), auto.Project(scratchProject(pulumiURL)))
	}
	var s auto.Stack
	if create {
		s, err = auto.UpsertStackInlineSource(ctx, name, projectName, prog, opts...)
	} else {
		s, err = auto.SelectStackInlineSource(ctx, name, projectName, prog, opts...)
		if err != nil && auto.IsSelectStack404Error(err) {
			return auto.Stack{}, fmt.Errorf("stack %q does not exist in %s: run `paddock up` first", name, redactURL(backend))
		}
	}
	if err != nil {
		return auto.Stack{}, fmt.Errorf("selecting stack %q in %s: %w", name, redactURL(backend), e.hideBackendPassword(err))
	}
	if e.opened == nil {
		e.opened = map[string]auto.Stack{}
	}
	e.opened[name] = s
	return s, nil
}

// scratchProject is the inline program's Pulumi.yaml. It names the backend
// only when the URL holds no credential: Pulumi.yaml is a file, and the
// Pulumi CLI takes the URL from PULUMI_BACKEND_URL in its environment just
// as well.
func scratchProject(backend string) workspace.Project {
	p := workspace.Project{Name: tokens.PackageName(ProjectName), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}
	if !URLHoldsSecret(backend) {
		p.Backend = &workspace.ProjectBackend{URL: backend}
	}
	return p
}
