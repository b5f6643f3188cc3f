package state

import (
	"context"
	"fmt"
)

// Fencer is a backend that refuses a stack's checkpoint written by a
// Paddock run that no longer holds the stack. A run takes the stack's fence
// (a token of its own) before its Pulumi update, and hands the CLI the
// environment FenceEnv gives, so the CLI's writes carry the token; the
// backend refuses a write carrying any other Paddock token. A write that
// carries none (a hand-run `pulumi up`) passes. Only pgstate is one: file://
// and s3:// take Pulumi's writes unconditionally.
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
