package pgtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartServesLoopbackAndCleansUp(t *testing.T) {
	var dir string
	t.Run("server", func(t *testing.T) {
		s := Start(t)
		dir = s.dir
		url := s.NewDatabase(t)
		if !strings.Contains(url, "@127.0.0.1:") {
			t.Errorf("not on loopback: %s", strings.ReplaceAll(url, s.Password, "****"))
		}
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1: %d %v", one, err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the server's directory %s is still there: %v", dir, err)
	}
}

// A wrong $PADDOCK_PG_BIN reads as a missing server, so the benchmark says
// PostgreSQL was not measured rather than that initdb failed.
func TestLaunchWithoutBinariesIsNotInstalled(t *testing.T) {
	t.Setenv(BinEnv, t.TempDir())
	s, err := Launch(Options{})
	if !errors.Is(err, ErrNotInstalled) || s != nil {
		t.Fatalf("Launch = %v, %v; want ErrNotInstalled", s, err)
	}
	if !strings.Contains(err.Error(), BinEnv+"=") {
		t.Errorf("the error does not name the setting at fault: %v", err)
	}
}

// Launch serves outside a test's cleanup: Stop ends the server and removes
// its directory, and may be called twice.
func TestLaunchAndStop(t *testing.T) {
	s := Start(t) // skips (or, as root, fails) where the server is missing
	s.Stop()
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("the server's directory %s is still there after Stop: %v", s.dir, err)
	}
	if _, err := s.Version(context.Background()); err == nil {
		t.Error("the server still answers after Stop")
	}
	s.Stop()

	s, err := Launch(Options{Nice: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	v, err := s.Version(context.Background())
	if err != nil || v == "" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	url, err := s.CreateDatabase(context.Background())
	if err != nil || !strings.Contains(url, "@127.0.0.1:") {
		t.Fatalf("CreateDatabase: %v (URL on loopback: %v)", err, strings.Contains(url, "@127.0.0.1:"))
	}
}
