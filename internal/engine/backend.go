package engine

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
	"github.com/paddock-platform/paddock/internal/state/pgstate"
	"github.com/paddock-platform/paddock/internal/state/s3state"
)

// This file is the engine's side of its backend (package state): the store
// of the backend URL, opened once per engine, and the stack's last checkpoint
// read through it. Each backend is a package of its own under state:
// filestate, pgstate, s3state (tested against SeaweedFS's S3 gateway).

// openStore opens the store of backend URL backend. A backend without a
// reader still gets a journal, on this runner.
func openStore(ctx context.Context, backend string) (state.Store, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, fmt.Errorf("the backend URL does not parse")
	}
	// A failed Open returns here as a nil Store, never as a Store holding a
	// nil pointer.
	switch u.Scheme {
	case "file":
		return filestate.Open(u, backend), nil
	case "postgres", "postgresql":
		// PGPASSWORD left the environment (CaptureBackendEnv): Paddock's own
		// connection takes it in the URL, which stays in this process.
		if pw := envPGPassword(); pw != "" && (u.User == nil || !hasPassword(u.User)) && !strings.Contains(strings.ToLower(u.RawQuery), "password") {
			user := ""
			if u.User != nil {
				user = u.User.Username()
			}
			u.User = url.UserPassword(user, pw)
			backend = u.String()
		}
		s, err := pgstate.Open(ctx, backend)
		if err != nil {
			return nil, err
		}
		return s, nil
	case "s3":
		s, err := s3state.Open(ctx, backend)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	reason := fmt.Sprintf("Paddock reads the state of file://, postgres:// and s3:// backends only; on %s:// it falls back to Pulumi's refresh (no reader for its buckets yet)", u.Scheme)
	if u.Scheme == "https" || u.Scheme == "http" {
		reason = "the Pulumi Cloud keeps the state behind its API, which only the engine reads; Paddock falls back to Pulumi's refresh"
	}
	return filestate.NewLocalJournal(backend, reason), nil
}

func hasPassword(u *url.Userinfo) bool {
	pw, ok := u.Password()
	return ok && pw != ""
}

// store is the engine's store of its backend, opened once.
func (e *Engine) store() (state.Store, error) {
	backend, err := e.backendURL()
	if err != nil {
		return nil, err
	}
	if s, ok := e.stores[backend]; ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	s, err := openStore(ctx, backend)
	if err != nil {
		return nil, err
	}
	if e.stores == nil {
		e.stores = map[string]state.Store{}
	}
	e.stores[backend] = s
	return s, nil
}

// Close releases the engine's connections to its backends.
func (e *Engine) Close() {
	for k, s := range e.stores {
		s.Close()
		delete(e.stores, k)
	}
	e.pgpass.Close()
	e.pgpass = nil
}

// passfile is the engine's in-memory pgpass file for password, made once.
func (e *Engine) passfile(password string) (*passfile, error) {
	if e.pgpass != nil && e.pgpass.password == password {
		return e.pgpass, nil
	}
	pf, err := newPassfile(password)
	if err != nil {
		return nil, err
	}
	e.pgpass.Close()
	e.pgpass = pf
	return pf, nil
}

// projectName is the Pulumi project the engine's stacks belong to.
func (e *Engine) projectName() string {
	if name := e.projectFileName(); name != "" {
		return name
	}
	return ProjectName
}

// readStackState is the last checkpoint of stack name: nil data when the
// stack has none yet or the backend is one Paddock does not read (err a
// *state.NoReaderError then). A checkpoint that does not decode is a
// *CorruptStateError.
func (e *Engine) readStackState(name string) (data []byte, where string, err error) {
	s, err := e.store()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	data, where, found, err := s.Checkpoint(ctx, project, stack)
	if err != nil && found {
		return nil, where, &CorruptStateError{Stack: name, File: where, Err: err}
	}
	if err != nil || !found {
		return nil, where, err
	}
	return data, where, nil
}

// stackRef is the project and bare stack name of stack name, which may be
// qualified as Pulumi's DIY backend allows (organization/project/stack).
func (e *Engine) stackRef(name string) (project, stack string) {
	parts := strings.Split(name, "/")
	if len(parts) == 3 && parts[1] != "" {
		return parts[1], parts[2]
	}
	return e.projectName(), parts[len(parts)-1]
}

// hideBackendPassword removes the backend URL's password from err: Pulumi
// quotes the URL as given in some of its errors (a database it cannot open).
func (e *Engine) hideBackendPassword(err error) error {
	if err == nil {
		return nil
	}
	backend, berr := e.backendURL()
	if berr != nil {
		return err
	}
	msg := err.Error()
	for _, secret := range backendSecrets(backend) {
		msg = strings.ReplaceAll(msg, secret, "****")
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError keeps the error chain (errors.Is/As) under a message
// without the password.
type redactedError struct {
	msg string
	err error
}

func (r *redactedError) Error() string { return r.msg }
func (r *redactedError) Unwrap() error { return r.err }
