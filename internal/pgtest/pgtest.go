// Package pgtest starts a throwaway PostgreSQL server for tests and for the
// benchmark: Debian's postgresql binaries (installed by `make tools-test`),
// initdb in a fresh directory, the server on 127.0.0.1 at a free port,
// stopped and removed in the test's cleanup (Start) or by Stop (Launch, for
// a program that is not a test). As root it runs as the unprivileged
// postgres user (the server refuses root). Missing binaries skip a test,
// except as root, where CI installs them: there they fail it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paddock-platform/paddock/internal/loopbackport"
)

// Server is one running PostgreSQL server.
type Server struct {
	Port     int
	User     string
	Password string
	dir      string
	// stop ends the server (and is nil until it accepts connections).
	stop func()
}

// ErrNotInstalled is Launch's error when the server's binaries are missing:
// a test skips or fails on it, the benchmark reports the backend as not
// measured.
var ErrNotInstalled = errors.New("no PostgreSQL server binaries (initdb, postgres): install Debian's postgresql (`make tools-test` does, as root) or set " + BinEnv)

// Options configure Launch.
type Options struct {
	// Nice runs the server at the lowest CPU priority, so a test's server
	// does not slow what else the machine may be timing. The benchmark
	// leaves it unset: there the server is part of what is timed.
	Nice bool
}

// BinEnv names a directory holding initdb and postgres, overriding the search.
const BinEnv = "PADDOCK_PG_BIN"

// findBin is the directory of initdb and postgres: $PADDOCK_PG_BIN, else the
// newest /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH),
// else PATH. A directory without both is ErrNotInstalled, $PADDOCK_PG_BIN's
// too: a wrong setting must read as a missing server, not as initdb failing.
func findBin() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if !hasServer(dir) {
			return "", fmt.Errorf("%s=%s holds no initdb and postgres: %w", BinEnv, dir, ErrNotInstalled)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && hasServer(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", ErrNotInstalled
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.IsDir() {
			return false
		}
	}
	return true
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch(Options{Nice: true})
	switch {
	case errors.Is(err, ErrNotInstalled) && os.Geteuid() != 0:
		t.Skipf("pgtest: %v; not root, so skipping", err)
	case errors.Is(err, ErrNotInstalled):
		t.Fatalf("pgtest: %v (as root the test packages are installed, so this is a failure)", err)
	case err != nil:
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a server; Stop stops it and removes its files. Missing
// binaries are ErrNotInstalled.
func Launch(o Options) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	owner := -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user (Debian's postgresql package creates it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		owner = uid
	}
	// Not a test's TempDir: its parent is private to this user, and the
	// server may run as another.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{User: "paddock", Password: randomHex(12), dir: dir}
	if err := s.launch(o, cred, owner, bin); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Stop stops the server and removes its directory; a second call does
// nothing.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	os.RemoveAll(s.dir)
}

func (s *Server) launch(o Options, cred *syscall.Credential, owner int, bin string) error {
	if owner >= 0 {
		if err := os.Chown(s.dir, owner, -1); err != nil {
			return err
		}
	}
	// The password reaches initdb in a file, never on its command line.
	pwfile := filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return err
	}
	if owner >= 0 {
		os.Chown(pwfile, owner, -1)
	}
	data := filepath.Join(s.dir, "data")
	initdb := command(o.Nice, cred, filepath.Join(bin, "initdb"), "-D", data, "-U", s.User, "--pwfile="+pwfile,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	out, err := initdb.CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}

	var lastErr error
	for range 3 { // a free port can be taken between finding it and binding it
		ports, err := loopbackport.Free(1)
		if err != nil {
			return err
		}
		s.Port = ports[0]
		if lastErr = s.run(o, cred, bin, data); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

func (s *Server) run(o Options, cred *syscall.Credential, bin, data string) error {
	logFile := filepath.Join(s.dir, "server.log")
	log, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := command(o.Nice, cred, filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(s.Port),
		"-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=40")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logFile)
			return fmt.Errorf("postgres exited (%v):\n%s", err, tail(string(b), 2000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			s.stop = stop
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(logFile)
			return fmt.Errorf("postgres did not accept connections in 60s:\n%s", tail(string(b), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// command runs name, at the lowest CPU priority when lowest is set, as
// cred's user when set.
func command(lowest bool, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if nice, err := exec.LookPath("nice"); err == nil && lowest {
		cmd = exec.Command(nice, append([]string{"-n", "19", name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// URL is the connection URL of database db, with the password.
func (s *Server) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.User, s.Password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	url, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return url
}

// CreateDatabase creates an empty database and returns its URL, which
// holds the password. Its errors do not.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := "t_" + randomHex(6)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", s.hide(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("creating database: %w", s.hide(err))
	}
	return s.URL(name), nil
}

// Version is the server's version, as it reports it (SHOW server_version).
func (s *Server) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", s.hide(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", s.hide(err)
	}
	return v, nil
}

// hide replaces the password in an error from the driver.
func (s *Server) hide(err error) error {
	if msg := err.Error(); strings.Contains(msg, s.Password) {
		return errors.New(strings.ReplaceAll(msg, s.Password, "****"))
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
