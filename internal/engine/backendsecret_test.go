package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/pins"
)

// resetBackendEnv makes the next CaptureBackendEnv read the environment
// again, and restores the captured values after the test.
func resetBackendEnv(t *testing.T) {
	t.Helper()
	saved := struct{ url, pw string }{backendEnv.url, backendEnv.pgPassword}
	backendEnv.once = sync.Once{}
	t.Cleanup(func() {
		backendEnv.once = sync.Once{}
		backendEnv.once.Do(func() {})
		backendEnv.url, backendEnv.pgPassword = saved.url, saved.pw
	})
}

func TestPulumiBackendTakesEverySpellingOfThePasswordOutOfTheURL(t *testing.T) {
	resetBackendEnv(t)
	t.Setenv("PULUMI_BACKEND_URL", "")
	os.Unsetenv("PGPASSWORD")
	const pw = "s3cr:t@/x"
	enc := url.QueryEscape(pw)
	for _, tc := range []struct {
		name, in, password string
	}{
		{"user info", "postgres://paddock:" + url.PathEscape(pw) + "@127.0.0.1:5432/state?sslmode=disable", pw},
		{"query", "postgres://paddock@127.0.0.1:5432/state?sslmode=disable&password=" + enc, pw},
		{"query key percent-encoded", "postgresql://paddock@127.0.0.1/state?pass%77ord=" + enc, pw},
		{"query key upper case", "postgres://paddock@127.0.0.1/state?PASSWORD=" + enc, pw},
		{"both, the query wins as in the driver", "postgres://paddock:other@127.0.0.1/state?password=" + enc, pw},
		{"none", "postgres://paddock@127.0.0.1/state?sslmode=disable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clean, got, err := pulumiBackend(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.password {
				t.Errorf("password %q, want %q", got, tc.password)
			}
			for _, s := range []string{pw, enc, url.PathEscape(pw), "other"} {
				if strings.Contains(clean, s) {
					t.Errorf("the URL for the Pulumi CLI %q still holds %q", clean, s)
				}
			}
			u, err := url.Parse(clean)
			if err != nil || u.User == nil || u.User.Username() != "paddock" || u.Host == "" || u.Path != "/state" {
				t.Errorf("the URL for the Pulumi CLI %q lost more than its password", clean)
			}
			if strings.Contains(tc.in, "sslmode") && u.Query().Get("sslmode") != "disable" {
				t.Errorf("%q lost sslmode", clean)
			}
		})
	}
	for _, tc := range []struct{ name, in, says string }{
		{"a client key's password", "postgres://paddock@127.0.0.1/state?sslpassword=k", `"sslpassword"`},
		{"an s3 secret", "s3://state?endpoint=127.0.0.1:9000&secret=k", "AWS_SECRET_ACCESS_KEY"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, _, err := pulumiBackend(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want a refusal saying %s", err, tc.says)
			}
			if strings.Contains(err.Error(), "=k") {
				t.Errorf("the refusal prints the credential: %v", err)
			}
		})
	}
	clean, got, err := pulumiBackend("file:///var/lib/paddock/state")
	if err != nil || got != "" || clean != "file:///var/lib/paddock/state" {
		t.Errorf("file:// = %q, %q, %v; want it unchanged", clean, got, err)
	}
}

func TestCaptureBackendEnvTakesTheCredentialsOutOfTheEnvironment(t *testing.T) {
	resetBackendEnv(t)
	t.Setenv("PULUMI_BACKEND_URL", "postgres://paddock:hunter22@127.0.0.1/state")
	t.Setenv("PGPASSWORD", "from-env-pw")
	CaptureBackendEnv()
	for _, kv := range os.Environ() {
		if strings.Contains(kv, "hunter22") || strings.Contains(kv, "from-env-pw") {
			t.Errorf("still in the environment children inherit: %s", kv)
		}
	}
	if envBackendURL() != "postgres://paddock:hunter22@127.0.0.1/state" {
		t.Errorf("the engine lost the URL: %q", envBackendURL())
	}
	clean, pw, err := pulumiBackend("postgres://paddock@127.0.0.1/state")
	if err != nil || pw != "from-env-pw" || strings.Contains(clean, "from-env-pw") {
		t.Errorf("PGPASSWORD: %q, %q, %v; want it as the password, out of the URL", clean, pw, err)
	}
	secrets := CapturedBackendSecrets()
	if !contains(secrets, "hunter22") || !contains(secrets, "from-env-pw") {
		t.Errorf("secrets to redact %q lack the URL's or PGPASSWORD's", secrets)
	}
	e := New(Options{})
	err = e.hideBackendPassword(errors.New("pq: password authentication failed for postgres://paddock:hunter22@127.0.0.1/state (from-env-pw)"))
	if strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "from-env-pw") {
		t.Errorf("hidden error still holds a password: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestPassfileLivesInMemorySealedAndPrivate(t *testing.T) {
	pf, err := newPassfile(`a:b\c`)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fi, err := os.Stat(pf.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v: PostgreSQL's drivers ignore a pgpass file others can read", fi.Mode().Perm())
	}
	// Two readers at once each read it whole (each open has its own offset).
	for i := 0; i < 2; i++ {
		b, err := os.ReadFile(pf.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `*:*:*:*:a\:b\\c`+"\n" {
			t.Errorf("read %d: %q", i, b)
		}
	}
	if f, err := os.OpenFile(pf.path, os.O_WRONLY, 0); err == nil {
		_, werr := f.WriteString("*:*:*:*:other\n")
		f.Close()
		if werr == nil {
			t.Errorf("the sealed passfile took a write")
		}
	}
	if link, err := os.Readlink(pf.path); err != nil || !strings.HasPrefix(link, "/memfd:") {
		t.Errorf("passfile is %q (%v), want a memfd: it must never be a file on disk", link, err)
	}
	pf.Close()
	if _, err := os.Stat(pf.path); err == nil {
		t.Errorf("%s still opens after Close", pf.path)
	}
}

// TestPostgresPasswordReachesPulumiOnlyInMemory runs the engine's own stack
// setup and an update through the pinned Pulumi CLI against a PostgreSQL
// server that demands the password (scram), with the password only in
// PULUMI_BACKEND_URL. A wrapper in front of the CLI records the environment
// and command line of every CLI process: what each plugin it starts inherits.
func TestPostgresPasswordReachesPulumiOnlyInMemory(t *testing.T) {
	cli := pulumiCLI(t)
	plugin := filepath.Join(paths.PulumiHome(), "plugins", "resource-kubernetes-v"+pins.PulumiKubernetes)
	if _, err := os.Stat(plugin); err != nil {
		t.Fatalf("the kubernetes provider plugin: %v (run `make tools`)", err)
	}
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)

	home := t.TempDir()
	seen := t.TempDir()
	os.MkdirAll(filepath.Join(home, "bin"), 0o755)
	os.MkdirAll(filepath.Join(home, "pulumi", "plugins"), 0o755)
	wrapper := fmt.Sprintf("#!/bin/sh\ncat /proc/$$/environ >%q/environ-$$\ncat /proc/$$/cmdline >%q/cmdline-$$\nexec %q \"$@\"\n", seen, seen, cli)
	if err := os.WriteFile(filepath.Join(home, "bin", "pulumi"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(plugin, filepath.Join(home, "pulumi", "plugins", filepath.Base(plugin))); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PADDOCK_HOME", home)
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	resetBackendEnv(t)
	t.Setenv("PULUMI_BACKEND_URL", backend)
	os.Unsetenv("PGPASSWORD")

	e := New(Options{})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()
	s, err := e.open(ctx, "dev", func(ctx *pulumi.Context) error { return nil }, true)
	if err != nil {
		t.Fatalf("opening a stack on PostgreSQL with the password out of the CLI's environment: %v", err)
	}
	if _, err := s.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	conn, err := pgx.Connect(ctx, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pulumi_state WHERE key LIKE '%stacks/%dev.json%'").Scan(&n); err != nil || n == 0 {
		rows, _ := conn.Query(ctx, "SELECT key FROM pulumi_state")
		keys, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		t.Fatalf("the CLI wrote no checkpoint to the database (%d, %v; keys %q)", n, err, keys)
	}

	u, _ := url.Parse(backend)
	pw, _ := u.User.Password()
	records, _ := filepath.Glob(filepath.Join(seen, "*"))
	if len(records) == 0 {
		t.Fatal("the wrapper recorded no CLI process")
	}
	for _, f := range records {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, spelling := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
			if strings.Contains(string(b), spelling) {
				t.Errorf("%s of a Pulumi CLI process holds the backend password", filepath.Base(f))
			}
		}
	}
}
