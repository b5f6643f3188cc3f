package engine

import (
	"github.com/paddock-platform/paddock/internal/state"
	"slices"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// This file is the engine's view of stacks as a platform repository has
// them: a stack's config read from its stack file (Pulumi.<stack>.yaml, with
// secrets decrypted by the stack's secrets provider), the lock that keeps two
// updates of one stack apart, and cancelling a lock a dead process left.

// ConfigValue is one config value of a stack: the text (JSON for objects)
// and whether it is a secret.
type ConfigValue struct {
	Value  string
	Secret bool
}

// StackConfig returns the config of the stack called name as Pulumi reads it
// from the project (Options.ProjectDir): the stack file's values, secrets
// decrypted. The stack is created in the backend when it does not exist yet
// and create is set (Pulumi can only decrypt a stack's secrets once it
// exists); the stack's program is set by the operation that follows.
func (e *Engine) StackConfig(ctx context.Context, name string, create bool) (map[string]ConfigValue, error) {
	if e.opts.ProjectDir == "" {
		return nil, errors.New("no project directory: a stack's config is read from the project's stack files")
	}
	s, err := e.open(ctx, name, noProgram, create)
	if err != nil {
		return nil, err
	}
	cfg, err := s.GetAllConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the config of stack %q: %w", name, err)
	}
	out := make(map[string]ConfigValue, len(cfg))
	for k, v := range cfg {
		out[k] = ConfigValue{Value: v.Value, Secret: v.Secret}
	}
	return out, nil
}

// noProgram stands in until the operation sets the stack's real program.
func noProgram(*pulumi.Context) error {
	return errors.New("no program set for this stack")
}

// secretsProvider is the provider a new stack is created with: the one the
// project's stack file names (secretsprovider:), else a passphrase.
func (e *Engine) secretsProvider(name string) string {
	if e.opts.ProjectDir == "" {
		return "passphrase"
	}
	proj, err := workspace.LoadProject(filepath.Join(e.opts.ProjectDir, "Pulumi.yaml"))
	if err != nil {
		return "passphrase"
	}
	dir := e.opts.ProjectDir
	if proj.StackConfigDir != "" {
		dir = filepath.Join(dir, proj.StackConfigDir)
	}
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	ps, err := workspace.LoadProjectStack(nil, proj, filepath.Join(dir, "Pulumi."+name+".yaml"))
	if err != nil || ps.SecretsProvider == "" || ps.SecretsProvider == "default" {
		return "passphrase"
	}
	return ps.SecretsProvider
}

// redactURL hides credentials in a backend URL: its user info, every query
// parameter whose name (decoded, any case) names a password, secret or token
// (libpq takes `?password=` and `?sslpassword=`), and each such value wherever
// else a malformed URL repeats it, in every spelling.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// What does not parse cannot be masked field by field: keep its
		// scheme, which says which backend it was, and nothing else.
		if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "@:/?") {
			return raw[:i] + "://****"
		}
		return "****"
	}
	var secrets []string
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets = append(secrets, pw)
		}
		u.User = url.User("****")
	}
	query, _ := url.ParseQuery(u.RawQuery) // what parses is judged; the rest is left as written
	masked := false
	for key, values := range query {
		if !state.SecretParam(key) {
			continue
		}
		for i, v := range values {
			if v != "" {
				secrets = append(secrets, v)
			}
			values[i] = "****"
		}
		masked = true
	}
	if masked {
		u.RawQuery = query.Encode()
	}
	out := u.String()
	for _, secret := range secrets {
		for _, spelling := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
			out = strings.ReplaceAll(out, spelling, "****")
		}
	}
	return out
}

// URLHoldsSecret reports whether a backend URL carries a credential in any
// spelling redactURL hides: a password in its user info, or a query
// parameter naming a password, secret or token. A URL that does not parse
// counts when, decoded, it reads like one.
func URLHoldsSecret(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		plain, uerr := url.QueryUnescape(raw)
		if uerr != nil {
			plain = raw
		}
		plain = strings.ToLower(plain)
		for _, word := range []string{"password", "secret", "token"} {
			if strings.Contains(plain, word) {
				return true
			}
		}
		return strings.Contains(plain, "@") && strings.Count(plain, ":") > 1
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return true
		}
	}
	query, _ := url.ParseQuery(u.RawQuery)
	for key, values := range query {
		if state.SecretParam(key) && slices.ContainsFunc(values, func(v string) bool { return v != "" }) {
			return true
		}
	}
	return false
}

// Lock is one update lock held on a stack; its format is the backend's
// (package state), and callers of Locks and Cancel name it here.
type Lock = state.Lock

// Locks lists the update locks held on the stack called name, on a file or
// PostgreSQL backend; others return nil. Each is judged by the journaled
// runs that explain it (judgeLock): a lock no run explains is never stale.
func (e *Engine) Locks(name string) ([]Lock, error) {
	s, err := e.store()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	out, err := s.Locks(ctx, project, stack)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	runs, _, err := e.readRuns(name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range out {
		out[i].Stale, out[i].Unexplained = judgeLock(out[i], runs, now)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out, nil
}

// judgeLock reports whether the update that holds lock l is known to be
// gone, and whether no journaled run explains the lock. Only a journaled run
// can say it is gone: one of the lock's host that was going on when the lock
// was taken (it started before, and its lease was
// renewed after, a minute either way for clocks). When such a run was
// written on this very host (state.Run.SameHost), the lock's pid is asked;
// otherwise the lock is stale when every such run's lease expired and no run
// of that host goes on. A lock no run explains (a hand-run `pulumi up`, a
// runner in another PID namespace under the same hostname) is never stale:
// only `paddock cancel`, which a person runs, removes it.
func judgeLock(l state.Lock, runs []*runRecord, now time.Time) (stale, unexplained bool) {
	var explaining []*runRecord
	for _, r := range runs {
		renewed := now.Add(-r.age)
		if r.Host == l.Hostname && !l.Timestamp.Before(r.Started.Add(-time.Minute)) && !l.Timestamp.After(renewed.Add(time.Minute)) {
			explaining = append(explaining, r)
		}
	}
	if len(explaining) == 0 {
		return false, true
	}
	for _, r := range explaining {
		if r.SameHost() {
			return l.PID > 0 && !state.HolderAlive(l.PID, l.Timestamp), false
		}
	}
	for _, r := range runs {
		if r.Host == l.Hostname && r.alive() {
			return false, false
		}
	}
	return true, false
}

// fileBackend is the root directory of the stack's file backend and the
// project name its paths use; root is "" for any other backend.
func (e *Engine) fileBackend() (root, project string, err error) {
	backend, err := e.backendURL()
	if err != nil {
		return "", "", err
	}
	u, err := url.Parse(backend)
	if err != nil || u.Scheme != "file" {
		return "", "", nil
	}
	root = u.Path
	if u.Host != "" && u.Host != "localhost" {
		root = filepath.Join(u.Host, u.Path)
	}
	return root, e.projectName(), nil
}

// projectFileName is the name in the project's Pulumi.yaml ("" without one).
func (e *Engine) projectFileName() string {
	if e.opts.ProjectDir == "" {
		return ""
	}
	proj, err := workspace.LoadProject(filepath.Join(e.opts.ProjectDir, "Pulumi.yaml"))
	if err != nil {
		return ""
	}
	return string(proj.Name)
}

// bareStack drops an org/project prefix from a stack name.
func bareStack(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// Cancel removes the update locks of the stack called name, after the
// process holding them died. It refuses while a holder on this host is still
// running, unless force is set: two updates of one stack at once can corrupt
// its state.
func (e *Engine) Cancel(ctx context.Context, name string, force bool) ([]Lock, error) {
	locks, err := e.Locks(name)
	if err != nil {
		return nil, err
	}
	if !force {
		for _, l := range locks {
			// A process of that pid alive here may be the holder: a person
			// decides (--force), never a guess.
			if !l.Stale && l.Hostname == state.Hostname() && l.PID > 0 && state.HolderAlive(l.PID, l.Timestamp) {
				return locks, fmt.Errorf("stack %q is locked by a running update (%s): wait for it, or stop it first (--force removes the lock anyway)", name, l)
			}
		}
	}
	s, err := e.open(ctx, name, noProgram, false)
	if err != nil {
		return nil, err
	}
	if err := s.Cancel(ctx); err != nil {
		return locks, fmt.Errorf("cancel of stack %q: %w", name, err)
	}
	return locks, nil
}

// isLockError reports whether err says another update holds the stack.
func isLockError(err error) bool {
	if err == nil {
		return false
	}
	var held *state.FenceHeldError
	return auto.IsConcurrentUpdateError(err) || errors.As(err, &held) || strings.Contains(err.Error(), "the stack is currently locked")
}

// withLock runs an update, retrying while another update holds the stack,
// for up to Options.LockWait. Without a wait it still retries once after a
// short random pause: two updates that start at the same instant can each
// see the other's lock and both back off. lease (nil: none) is the run's
// lease: once it lapsed, no other run's lock is removed.
func (e *Engine) withLock(ctx context.Context, op, name string, lease func() error, run func() error) error {
	deadline := time.Now().Add(e.opts.LockWait)
	told := false
	for attempt := 0; ; attempt++ {
		err := run()
		if !isLockError(err) {
			return err
		}
		if lease != nil {
			if lerr := lease(); lerr != nil {
				return lerr
			}
		}
		// The holder may have died since: its lock goes, and the run retries.
		if e.removeStaleLocks(op, name) {
			continue
		}
		if attempt >= 1 && time.Now().After(deadline) {
			return e.lockError(op, name, err)
		}
		wait := time.Duration(200+rand.IntN(800)) * time.Millisecond
		if attempt >= 1 {
			if !told {
				fmt.Fprintf(e.opts.Out, "paddock %s: stack %q is locked by another update; waiting up to %s\n", op, name, time.Until(deadline).Round(time.Second))
				told = true
			}
			wait = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// lockError says who holds the stack and what to do.
func (e *Engine) lockError(op, name string, err error) error {
	locks, _ := e.Locks(name)
	var b strings.Builder
	fmt.Fprintf(&b, "%s of stack %q: another update is running on this stack, so nothing was changed", op, name)
	for _, l := range locks {
		fmt.Fprintf(&b, "\n  locked by %s", l)
	}
	if len(locks) == 0 {
		// Not a file backend, or the lock went meanwhile: say what the backend said.
		for _, line := range strings.Split(err.Error(), "\n") {
			if i := strings.Index(line, ": created by "); i >= 0 {
				fmt.Fprintf(&b, "\n  locked by %s", strings.TrimSpace(line[i+len(": created by "):]))
			}
		}
	}
	stale := len(locks) > 0
	for _, l := range locks {
		stale = stale && l.Stale
	}
	if stale {
		fmt.Fprintf(&b, "\n  the update that held it died: run `paddock cancel --stack %s`, then %s again", name, op)
	} else {
		fmt.Fprintf(&b, "\n  wait for it (--lock-wait DURATION waits for it); if it died, run `paddock cancel --stack %s`", name)
	}
	return errors.New(b.String())
}

// waitAfter waits for the event stream of an operation to end. An operation
// that failed before the engine started (another update holds the lock)
// never opens the stream, so after a failure it waits only briefly.
func (p *progress) waitAfter(err error) {
	if err == nil {
		p.wait()
		return
	}
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
	}
}
