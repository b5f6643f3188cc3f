package engine

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/paddock-platform/paddock/internal/state"
)

// The Pulumi CLI hands its whole environment to every plugin it starts (the
// Kubernetes provider, and through it the kubeconfig's exec plugins), so a
// backend password in PULUMI_BACKEND_URL or PGPASSWORD would sit in each of
// their /proc/<pid>/environ. Paddock gives the CLI the PostgreSQL URL without
// its password and the password in a pgpass file that exists only in this
// process's memory (a sealed memfd, read through /proc/<pid>/fd/<n>, gone when
// Paddock exits however it exits). The CLI's children inherit only the path.

// backendEnv is what Paddock's own environment said about the backend,
// captured once and removed from the environment, so nothing Paddock starts
// (the Pulumi CLI, `local up`'s processes, client-go's exec plugins) inherits it.
var backendEnv struct {
	once       sync.Once
	url        string // PULUMI_BACKEND_URL
	pgPassword string // PGPASSWORD
}

// CaptureBackendEnv takes PULUMI_BACKEND_URL (when it holds a credential)
// and PGPASSWORD out of the process environment and keeps them for the
// engine. The CLI calls it first thing; the engine calls it again before it
// reads either (only the first call reads the environment).
func CaptureBackendEnv() {
	backendEnv.once.Do(func() {
		backendEnv.url = os.Getenv("PULUMI_BACKEND_URL")
		if URLHoldsSecret(backendEnv.url) {
			_ = os.Unsetenv("PULUMI_BACKEND_URL")
		}
		if pw, ok := os.LookupEnv("PGPASSWORD"); ok {
			backendEnv.pgPassword = pw
			_ = os.Unsetenv("PGPASSWORD")
		}
	})
}

// CapturedBackendSecrets are the credentials CaptureBackendEnv took from the
// environment, in the spellings they may be printed in, for output redaction.
func CapturedBackendSecrets() []string {
	CaptureBackendEnv()
	return backendSecrets(backendEnv.url)
}

// envBackendURL is PULUMI_BACKEND_URL: as set now, else as captured (a
// value set after the capture, by a test or a program embedding the engine,
// is taken as it stands).
func envBackendURL() string {
	CaptureBackendEnv()
	if v := os.Getenv("PULUMI_BACKEND_URL"); v != "" {
		return v
	}
	return backendEnv.url
}

// envPGPassword is PGPASSWORD, as set now, else as captured.
func envPGPassword() string {
	CaptureBackendEnv()
	if v, ok := os.LookupEnv("PGPASSWORD"); ok {
		return v
	}
	return backendEnv.pgPassword
}

// pulumiBackend is the backend URL the Pulumi CLI is given and, for a
// PostgreSQL backend with a password (in the URL in any spelling, or in
// PGPASSWORD), that password, which must reach the CLI another way.
// A credential the CLI could only take from the URL is refused.
func pulumiBackend(backend string) (clean, password string, err error) {
	CaptureBackendEnv()
	u, perr := url.Parse(backend)
	if perr != nil {
		if URLHoldsSecret(backend) {
			return "", "", fmt.Errorf("the backend URL %s does not parse, and it seems to hold a credential that the Pulumi CLI would pass to every plugin it starts: fix the URL", redactURL(backend))
		}
		return backend, "", nil
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		if URLHoldsSecret(backend) {
			return "", "", fmt.Errorf("the backend URL %s holds a credential, which the Pulumi CLI would pass to every plugin it starts: give the %s backend its credentials the way its SDK reads them (for s3://, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile), not in the URL", redactURL(backend), u.Scheme)
		}
		return backend, "", nil
	}
	password = envPGPassword()
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			if pw != "" {
				password = pw
			}
			u.User = url.User(u.User.Username())
		}
	}
	// Keys and values are judged decoded, so `pass%77ord=` and `Password=`
	// are the password too (the driver decodes keys before it reads them).
	query, qerr := url.ParseQuery(u.RawQuery)
	if qerr != nil && URLHoldsSecret(backend) {
		return "", "", fmt.Errorf("the query of backend URL %s does not parse, and it seems to hold a credential: fix the URL", redactURL(backend))
	}
	for key, values := range query {
		switch lower := strings.ToLower(key); {
		case lower == "password":
			for _, v := range values {
				if v != "" {
					password = v // the driver lets the query override the user info
				}
			}
			delete(query, key)
		case state.SecretParam(key):
			return "", "", fmt.Errorf("the backend URL %s holds %q, which the Pulumi CLI would pass to every plugin it starts, and which PostgreSQL's driver reads only from the URL: remove it (for an encrypted client key, decrypt it into a file only you can read)", redactURL(backend), key)
		}
	}
	u.RawQuery = query.Encode()
	return u.String(), password, nil
}

// passfile is a pgpass file in memory: one line that gives password to
// every host, port, database and user (the CLI connects to one backend).
type passfile struct {
	f        *os.File
	path     string
	password string // to tell whether a later stack needs another
}

// newPassfile writes password into a sealed memfd of mode 0600 (the driver
// ignores a pgpass file others can read) and names it by /proc path, which
// the CLI, a child of this process, may open.
func newPassfile(password string) (*passfile, error) {
	fd, err := unix.MemfdCreate("paddock-pgpass", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("holding the backend password in memory for the Pulumi CLI: %w", err)
	}
	f := os.NewFile(uintptr(fd), "paddock-pgpass")
	line := "*:*:*:*:" + pgpassEscape(password) + "\n"
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("holding the backend password in memory for the Pulumi CLI: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return nil, fmt.Errorf("holding the backend password in memory for the Pulumi CLI: %w", err)
	}
	// Sealed, so nothing that can open it can change what it says.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the in-memory backend password: %w", err)
	}
	return &passfile{f: f, path: fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd), password: password}, nil
}

func (p *passfile) Close() {
	if p != nil && p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

// pgpassEscape escapes what a pgpass line separates its fields with.
func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// backendSecrets are the credentials a backend URL holds, in the forms they
// may appear in an error (as written and decoded), longest first.
func backendSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if esc := url.QueryEscape(s); esc != s {
				out = append(out, esc)
			}
			if esc := url.PathEscape(s); esc != s {
				out = append(out, esc)
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		add(pw)
	}
	query, _ := url.ParseQuery(u.RawQuery)
	for key, values := range query {
		if state.SecretParam(key) {
			for _, v := range values {
				add(v)
			}
		}
	}
	add(envPGPassword())
	// Longest first, so a secret that contains another is replaced whole.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
