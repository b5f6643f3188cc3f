package engine

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/procfs"
	"github.com/paddock-platform/paddock/internal/state"
)

// This file is how an update recovers from the one before it dying: a lock
// left by a process that is gone, pending operations the dead update never
// finished, and a state file that no longer parses. The first two are
// repaired before every up and destroy; the third stops the run before
// anything is applied and names the recovery (RestoreState).

// checkpoint is the part of a file backend's stack file Paddock reads.
type checkpoint struct {
	Checkpoint struct {
		Latest *struct {
			Resources []struct {
				URN  string `json:"urn"`
				Type string `json:"type"`
				ID   string `json:"id"`
				// Only the object's identity: a 1,000-tenant stack's
				// outputs decoded whole took 1.7 s and most of a GiB.
				Outputs converge.ObjectIdentity `json:"outputs"`
			} `json:"resources"`
			PendingOperations []struct {
				Type     string `json:"type"`
				Resource struct {
					URN  string `json:"urn"`
					Type string `json:"type"`
				} `json:"resource"`
			} `json:"pending_operations"`
		} `json:"latest"`
	} `json:"checkpoint"`
}

// PendingOperation is an operation a dead update started and never finished.
type PendingOperation struct {
	Op  string // "creating", "updating", "deleting", ...
	URN string
}

// stateFile is the stack file of stack name on a file backend: "" for other
// backends or a stack that does not exist yet.
func (e *Engine) stateFile(name string) (string, error) {
	root, project, err := e.fileBackend()
	if err != nil || root == "" {
		return "", err
	}
	base := filepath.Join(root, ".pulumi", "stacks", project, bareStack(name))
	for _, f := range []string{base + ".json", base + ".json.gz"} {
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", nil
}

// CorruptStateError is a stack file that does not parse: nothing was
// applied, and RestoreState puts the last good checkpoint back.
type CorruptStateError struct {
	Stack string
	File  string
	Err   error
}

func (c *CorruptStateError) Error() string {
	return fmt.Sprintf("the state of stack %q (%s) is corrupt: %v\n"+
		"  nothing was applied. Recover the last good checkpoint with `paddock state restore --stack %s`\n"+
		"  (it keeps the corrupt file next to it), then run up again: its refresh reconciles the\n"+
		"  restored state with the cluster, and `paddock drift` reports what no stack holds", c.Stack, c.File, c.Err, c.Stack)
}

// readCheckpoint parses a stack file (plain or gzipped JSON).
func readCheckpoint(file string) (*checkpoint, error) {
	var c checkpoint
	if err := decodeStackFile(file, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// decodeStackFile decodes a file backend's stack file, plain or gzipped
// JSON, into v: the one reader of the backend's files, whichever part of
// them the caller needs.
func decodeStackFile(file string, v any) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(file, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	return json.NewDecoder(r).Decode(v)
}

// checkState reads the stack's checkpoint (a file or PostgreSQL backend): a
// corrupt one is a CorruptStateError; otherwise the pending operations it
// holds. A backend Paddock does not read has none to report.
func (e *Engine) checkState(name string) ([]PendingOperation, error) {
	c, err := e.stackCheckpoint(name)
	if err != nil || c == nil || c.Checkpoint.Latest == nil {
		return nil, err
	}
	var out []PendingOperation
	for _, op := range c.Checkpoint.Latest.PendingOperations {
		out = append(out, PendingOperation{Op: op.Type, URN: op.Resource.URN})
	}
	return out, nil
}

// stackCheckpoint parses the stack's checkpoint: nil when there is none, or
// the backend is one Paddock does not read.
func (e *Engine) stackCheckpoint(name string) (*checkpoint, error) {
	data, where, err := e.readStackState(name)
	var noReader *state.NoReaderError
	if errors.As(err, &noReader) {
		return nil, nil
	}
	if err != nil || data == nil {
		return nil, err
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, &CorruptStateError{Stack: name, File: where, Err: err}
	}
	return &c, nil
}

// prepare readies stack s for an update after a crash: it stops provider
// plugins a dead update left running and removes locks whose holder is gone
// from this host. The pending operations a dead update left are cleared by
// clearPending, inside the update's lock loop.
func (e *Engine) prepare(op string, s auto.Stack) {
	reapOrphanedPlugins(e.opts.Out, op)
	e.removeStaleLocks(op, s.Name())
}

// clearPending clears the pending operations a dead update left, so the
// update that follows converges instead of carrying them forever. Kubernetes
// creates are server-side applies, so an object a dead update created is
// adopted by the next one, never duplicated. While any update holds the
// stack its pending operations are its own work in progress: nothing is
// touched, and the caller's lock loop waits or fails as it would.
func (e *Engine) clearPending(ctx context.Context, op string, s auto.Stack) error {
	name := s.Name()
	if locks, _ := e.Locks(name); len(locks) > 0 {
		return nil
	}
	pending, err := e.checkState(name)
	if err != nil || len(pending) == 0 {
		return err
	}
	fmt.Fprintf(e.opts.Out, "paddock %s: the last update of stack %q was interrupted; clearing %d pending operation(s):\n", op, name, len(pending))
	for _, p := range pending {
		fmt.Fprintf(e.opts.Out, "  %s %s\n", p.Op, describe(urnType(p.URN), p.URN))
	}
	_, err = s.Refresh(ctx, optrefresh.ClearPendingCreates(), optrefresh.Parallel(e.parallel()), optrefresh.SuppressProgress())
	return err
}

// removeStaleLocks removes the update locks of stack name when every holder
// is gone (Locks: a process of this host, or a journaled run of another host
// whose lease expired), and reports whether it did. A live holder, or one no
// journal explains, is never second-guessed.
func (e *Engine) removeStaleLocks(op, name string) bool {
	locks, err := e.Locks(name)
	if err != nil || len(locks) == 0 {
		return false
	}
	for _, l := range locks {
		if !l.Stale {
			return false
		}
	}
	store, err := e.store()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	for _, l := range locks {
		if err := store.RemoveLock(ctx, l.File); err != nil {
			fmt.Fprintf(e.opts.Out, "paddock %s: cannot remove the lock of a dead update (%s): %v\n", op, l, err)
			return false
		}
		fmt.Fprintf(e.opts.Out, "paddock %s: removed the lock of a dead update (%s)\n", op, l)
	}
	// The dead update's plugins outlive it: they are orphans only now.
	reapOrphanedPlugins(e.opts.Out, op)
	return true
}

// Backup is one saved checkpoint of a stack on a file backend.
type Backup struct {
	File string
	Time time.Time
	// Resources is how many resources it holds; -1 when it does not parse.
	Resources int
}

// Backups lists the checkpoints the file backend kept of stack name (the
// .bak of the last one and the per-update backups), newest first.
func (e *Engine) Backups(name string) ([]Backup, error) {
	root, project, err := e.fileBackend()
	if err != nil {
		return nil, err
	}
	if root == "" {
		return nil, errors.New("only a file backend keeps checkpoint backups Paddock can read; restore a checkpoint of another backend with `pulumi stack import`")
	}
	stack := bareStack(name)
	var files []string
	files = append(files, filepath.Join(root, ".pulumi", "stacks", project, stack+".json.bak"))
	more, _ := filepath.Glob(filepath.Join(root, ".pulumi", "backups", project, stack, stack+".*.json"))
	files = append(files, more...)
	var out []Backup
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		b := Backup{File: f, Time: st.ModTime(), Resources: -1}
		if c, err := readCheckpoint(f); err == nil {
			b.Resources = 0
			if c.Checkpoint.Latest != nil {
				b.Resources = len(c.Checkpoint.Latest.Resources)
			}
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

// RestoreState puts the newest checkpoint backup that parses back as the
// state of stack name (a file backend only) and returns it. It refuses while
// the current state still parses (unless force) or an update holds the
// stack: an older checkpoint forgets what was done since. The file it
// replaces is kept as <stack>.json.corrupt-<unix time>. A following up
// refreshes the restored state against the cluster and adopts what the spec
// still declares; objects made since the backup that the spec no longer
// declares are reported by drift (S05), not deleted.
func (e *Engine) RestoreState(name string, force bool) (*Backup, string, error) {
	current, err := e.stateFile(name)
	if err != nil {
		return nil, "", err
	}
	if current != "" && !force {
		if _, err := readCheckpoint(current); err == nil {
			return nil, "", fmt.Errorf("the state of stack %q (%s) is readable: restoring an older checkpoint would forget what was done since; use --force to restore anyway", name, current)
		}
	}
	if locks, _ := e.Locks(name); len(locks) > 0 {
		for _, l := range locks {
			if !l.Stale {
				return nil, "", fmt.Errorf("stack %q is locked by a running update (%s): wait for it", name, l)
			}
		}
	}
	backups, err := e.Backups(name)
	if err != nil {
		return nil, "", err
	}
	var good *Backup
	for i := range backups {
		if backups[i].Resources >= 0 {
			good = &backups[i]
			break
		}
	}
	if good == nil {
		return nil, "", fmt.Errorf("stack %q has no readable checkpoint backup to restore", name)
	}
	// Read the backup before touching anything, so a failure leaves all as it was.
	data, err := os.ReadFile(good.File)
	if err != nil {
		return nil, "", err
	}
	root, project, _ := e.fileBackend()
	target := filepath.Join(root, ".pulumi", "stacks", project, bareStack(name)+".json")
	tmp := target + ".restore"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, "", err
	}
	kept := ""
	if current != "" {
		kept = fmt.Sprintf("%s.corrupt-%d", current, time.Now().Unix())
		if err := os.Rename(current, kept); err != nil {
			os.Remove(tmp)
			return nil, "", err
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		return nil, "", err
	}
	return good, kept, nil
}

// reapOrphanedPlugins stops provider plugins a dead update left running. The
// Pulumi CLI starts each plugin in a process group of its own, so a CLI killed
// with SIGKILL leaves its plugins behind, each holding a few hundred MB for
// good. A plugin from Paddock's PULUMI_HOME whose parent is no longer a Pulumi
// CLI is such an orphan: a live update's plugins always have theirs.
func reapOrphanedPlugins(out io.Writer, op string) {
	plugins, err := filepath.EvalSymlinks(filepath.Join(paths.PulumiHome(), "plugins"))
	if err != nil {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", ent.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, plugins+string(filepath.Separator)) {
			continue
		}
		ppid, ok := parentPID(pid)
		if !ok {
			continue
		}
		parent, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(ppid), "exe"))
		if err != nil && ppid != 1 {
			continue // a parent we cannot read may be a live CLI: leave it
		}
		// A CLI whose binary was replaced since it started reads "pulumi (deleted)".
		if filepath.Base(strings.TrimSuffix(parent, " (deleted)")) == "pulumi" {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err == nil {
			fmt.Fprintf(out, "paddock %s: stopped %s (pid %d), left running by a dead update\n", op, filepath.Base(exe), pid)
		}
	}
}

// parentPID is field 4 of /proc/PID/stat.
func parentPID(pid int) (int, bool) {
	st, err := procfs.ReadStat(pid)
	return st.PPID, err == nil
}

// ObjectRef names one Kubernetes object.
type ObjectRef = drift.ObjectRef

// Inventory lists the Kubernetes objects the state of stack name holds and
// the operations a dead update left pending (a file or PostgreSQL backend;
// nil for others).
func (e *Engine) Inventory(name string) ([]ObjectRef, []PendingOperation, error) {
	c, err := e.stackCheckpoint(name)
	if err != nil || c == nil || c.Checkpoint.Latest == nil {
		return nil, nil, err
	}
	var objs []ObjectRef
	for _, r := range c.Checkpoint.Latest.Resources {
		if !strings.HasPrefix(r.Type, "kubernetes:") || strings.HasPrefix(r.Type, "pulumi:providers:") {
			continue
		}
		o := ObjectRef{
			APIVersion: string(r.Outputs.APIVersion),
			Kind:       string(r.Outputs.Kind),
			Name:       r.Outputs.Name(),
			Namespace:  r.Outputs.Namespace(),
		}
		if o.Kind == "" || o.Name == "" {
			continue
		}
		objs = append(objs, o)
	}
	var pending []PendingOperation
	for _, op := range c.Checkpoint.Latest.PendingOperations {
		pending = append(pending, PendingOperation{Op: op.Type, URN: op.Resource.URN})
	}
	return objs, pending, nil
}
