package engine

import (
	"context"
	"encoding/json"
	"os"
	"os/user"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

// lockForRepair takes the stack's lock before the fast path changes live
// objects, in the backend's own format (Pulumi's lock: one JSON object per
// holder under .pulumi/locks/organization/<project>/<stack>/, a file or a
// row). A Pulumi run that starts meanwhile then refuses or waits as it would
// for another Pulumi run, and another paddock's fast path sees it. Like
// Pulumi, it writes its own lock first and then looks: any other holder
// means it lost, and it steps back.
func (e *Engine) lockForRepair(name string) (release func(), holder string, err error) {
	store, err := e.store()
	if err != nil {
		return nil, "", err
	}
	who := ""
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	body, err := json.Marshal(struct {
		PID       int       `json:"pid"`
		Username  string    `json:"username"`
		Hostname  string    `json:"hostname"`
		Timestamp time.Time `json:"timestamp"`
	}{os.Getpid(), who, state.Hostname(), time.Now().UTC()})
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	mine, err := store.AddLock(ctx, project, stack, body)
	if err != nil {
		return nil, "", err
	}
	release = func() {
		ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
		defer cancel()
		_ = store.RemoveLock(ctx, mine)
	}
	locks, err := e.Locks(name)
	if err != nil {
		release()
		return nil, "", err
	}
	for _, l := range locks {
		if l.File != mine {
			release()
			return nil, l.String(), nil
		}
	}
	return release, "", nil
}
