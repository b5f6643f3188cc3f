package pgtest

import (
	"context"
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
