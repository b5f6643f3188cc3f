package state

import (
	"context"
	"fmt"
	"strings"
)

// The backend's side of the fence: a Paddock run whose lease lapsed must
// not have its Pulumi CLI's checkpoint taken, even when the runner stalled
// as a whole and its CLI writes before the runner's own fence kills it.
// Every backend Paddock reads checks this itself, on write:
//
//   - postgres:// is a Fencer: a trigger refuses a checkpoint written with
//     the token of a run that no longer holds the stack's fence.
//   - file:// and s3:// are CheckpointSwappers: the CLI of a Paddock run
//     writes a private staging backend, and Paddock copies each checkpoint
//     back with a conditional write (an exclusive lock and a digest of the
//     file on file://, If-Match on the ETag on s3://), which the backend
//     refuses once another run changed the checkpoint.
//
// A write that carries no Paddock token, or does not go through Paddock (a
// hand-run `pulumi up`), passes on every backend.

// Fencer is a backend that refuses a stack's checkpoint written by a
// Paddock run that no longer holds the stack. A run takes the stack's fence
// (a token of its own) before its Pulumi update, and hands the CLI the
// environment FenceEnv gives, so the CLI's writes carry the token; the
// backend refuses a write carrying any other Paddock token. A write that
// carries none (a hand-run `pulumi up`) passes. pgstate is one; file:// and
// s3:// fence through CheckpointSwapper instead.
type Fencer interface {
	// TakeFence makes token the fence of the stack for run runKey, unless
	// the run holding it still goes on (holderAlive says so of a run's key):
	// a *FenceHeldError then. Backend setup the role may not make (a
	// trigger on Pulumi's table) is a *FenceUnavailableError.
	TakeFence(ctx context.Context, project, stack, token, runKey string, holderAlive func(runKey string) bool) error
	// ReleaseFence clears the stack's fence if token still holds it.
	ReleaseFence(ctx context.Context, project, stack, token string) error
	// FenceEnv is the environment that makes the Pulumi CLI's writes carry
	// token.
	FenceEnv(token string) map[string]string
}

// FenceHeldError is a stack whose fence another live run holds.
type FenceHeldError struct{ RunKey string }

func (f *FenceHeldError) Error() string {
	return fmt.Sprintf("the stack is currently locked: its fence is held by the live run %s", f.RunKey)
}

// FenceUnavailableError is a backend that cannot fence this stack.
type FenceUnavailableError struct{ Reason string }

func (f *FenceUnavailableError) Error() string { return f.Reason }

// CheckpointVersion is one checkpoint of a stack as its backend holds it:
// its key (one of CheckpointVariants; "" when the stack has none) and the
// tag the backend compares on a conditional write (S3's ETag, a digest of
// the file's bytes on file://).
type CheckpointVersion struct {
	Key, Tag string
}

// None reports whether the version is that of a stack without a checkpoint.
func (v CheckpointVersion) None() bool { return v.Key == "" }

// CheckpointSwapper is a backend whose checkpoint writes are conditional:
// a writer names the version it last read or wrote, and the backend writes
// only over that very version.
type CheckpointSwapper interface {
	// RawCheckpoint is the stack's checkpoint as stored (compressed as its
	// key says) and its version; nil and the zero version when it has none.
	RawCheckpoint(ctx context.Context, project, stack string) ([]byte, CheckpointVersion, error)
	// SwapCheckpoint writes raw as the stack's checkpoint under key (one of
	// CheckpointVariants) when the backend still holds old (old.None():
	// when it holds none), and returns the version written. When it holds
	// anything else the write is refused with a *CheckpointChangedError and
	// nothing is written, not even in part.
	SwapCheckpoint(ctx context.Context, project, stack, key string, raw []byte, old CheckpointVersion) (CheckpointVersion, error)
	// PutUpdateFile writes one of the files Pulumi keeps per update of the
	// stack (UpdateFileKey: its history, or the backup of the checkpoint it
	// started from), named as Pulumi names them: each name is new, so the
	// write is unconditional.
	PutUpdateFile(ctx context.Context, kind, project, stack, name string, raw []byte) error
}

// CheckpointChangedError is a conditional checkpoint write refused: the
// stack's checkpoint is no longer the one the writer last read or wrote.
type CheckpointChangedError struct {
	Where string // the checkpoint, for messages (never a secret)
	// Now says what the backend holds instead, when known.
	Now string
}

func (c *CheckpointChangedError) Error() string {
	msg := fmt.Sprintf("the backend refused the checkpoint write to %s: the checkpoint is no longer the one this run last read or wrote", c.Where)
	if c.Now != "" {
		msg += " (" + c.Now + ")"
	}
	return msg
}

// The kinds of files Pulumi's DIY backend keeps per update of a stack.
const (
	UpdateHistory = "history" // what each update did, and its checkpoint
	UpdateBackups = "backups" // the checkpoint each update started from
)

// UpdateFileKey is where Pulumi's DIY backend keeps a file of kind
// (UpdateHistory or UpdateBackups) of the stack's updates; name "" is their
// directory. name must be a plain file name, kind one of the two: else "".
func UpdateFileKey(kind, project, stack, name string) string {
	if kind != UpdateHistory && kind != UpdateBackups {
		return ""
	}
	if name != "" && (name[0] == '.' || strings.ContainsAny(name, "/\\")) {
		return ""
	}
	return ".pulumi/" + kind + "/" + project + "/" + stack + "/" + name
}
