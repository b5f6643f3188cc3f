package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/google/uuid"
)

// lockForRepair takes the stack's lock before the fast path changes live
// objects, in the file backend's own format (one JSON file per holder under
// .pulumi/locks/organization/<project>/<stack>/). A Pulumi run that starts
// meanwhile then refuses or waits as it would for another Pulumi run, and
// another paddock's fast path sees it. Like Pulumi, it writes its own file
// first and then looks: any other holder means it lost, and it steps back.
func (e *Engine) lockForRepair(name string) (release func(), holder string, err error) {
	root, project, err := e.fileBackend()
	if err != nil {
		return nil, "", err
	}
	if root == "" {
		return nil, "", fmt.Errorf("the backend is not a file backend")
	}
	dir := filepath.Join(root, ".pulumi", "locks", "organization", project, bareStack(name))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("the stack's lock directory: %w", err)
	}
	host, _ := os.Hostname()
	who := ""
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	body, err := json.Marshal(struct {
		PID       int       `json:"pid"`
		Username  string    `json:"username"`
		Hostname  string    `json:"hostname"`
		Timestamp time.Time `json:"timestamp"`
	}{os.Getpid(), who, host, time.Now().UTC()})
	if err != nil {
		return nil, "", err
	}
	mine := filepath.Join(dir, uuid.NewString()+".json")
	f, err := os.OpenFile(mine, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("writing the stack's lock: %w", err)
	}
	_, werr := f.Write(body)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	release = func() { _ = os.Remove(mine) }
	if werr != nil {
		release()
		return nil, "", fmt.Errorf("writing the stack's lock: %w", werr)
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
