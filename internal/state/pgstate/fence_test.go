package pgstate

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/state"
)

// The fence on a real PostgreSQL, with Pulumi's table in a schema of its
// own: the fence changes hands only from a dead holder, and the trigger
// refuses the stack's checkpoint (every variant, and its delete) from a
// session naming another Paddock token, while the holder's, a session with
// no token and the stack's other keys pass.
func TestFenceOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA st; CREATE TABLE st.pulumi_state (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(backend)
	q := u.Query()
	q.Set("table", "st.pulumi_state")
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	alive := func(key string) func(string) bool { return func(k string) bool { return k == key } }
	if err := s.TakeFence(ctx, "paddock", "dev", "tokena", "run-a", alive("")); err != nil {
		t.Fatal(err)
	}
	var held *state.FenceHeldError
	if err := s.TakeFence(ctx, "paddock", "dev", "tokenb", "run-b", alive("run-a")); !errors.As(err, &held) || held.RunKey != "run-a" {
		t.Fatalf("B took the fence of a live run: %v", err)
	}
	if err := s.TakeFence(ctx, "paddock", "dev", "tokenb", "run-b", alive("")); err != nil {
		t.Fatalf("B taking the fence of a dead run: %v", err)
	}
	// Another stack's fence is its own.
	if err := s.TakeFence(ctx, "paddock", "prod", "tokenc", "run-c", alive("run-b")); err != nil {
		t.Fatal(err)
	}

	// write writes key as a session naming app would.
	write := func(app, sql, key string) error {
		cfg, err := pgx.ParseConfig(backend)
		if err != nil {
			t.Fatal(err)
		}
		if app != "" {
			cfg.RuntimeParams["application_name"] = app
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql, key)
		return err
	}
	const upsert = `INSERT INTO st.pulumi_state (key, data) VALUES ($1, '{}') ON CONFLICT (key) DO UPDATE SET data = '{}', updated_at = now()`
	const del = `DELETE FROM st.pulumi_state WHERE key = $1`
	checkpoint := s.prefix + ".pulumi/stacks/paddock/dev.json"
	stale, holder := s.FenceEnv("tokena")["PGAPPNAME"], s.FenceEnv("tokenb")["PGAPPNAME"]
	if err := write(holder, upsert, checkpoint); err != nil {
		t.Fatalf("the holder's checkpoint: %v", err)
	}
	for _, key := range []string{checkpoint, checkpoint + ".gz", checkpoint + ".zst"} {
		if err := write(stale, upsert, key); err == nil || !strings.Contains(err.Error(), "paddock fence: the write of "+key+" is refused") || !strings.Contains(err.Error(), "run-b holds it now") {
			t.Errorf("a stale run's write of %s: %v", key, err)
		}
	}
	if err := write(stale, del, checkpoint); err == nil {
		t.Error("a stale run deleted the checkpoint")
	}
	for _, ok := range []struct{ app, key string }{
		{"", checkpoint},     // a hand-run pulumi
		{"psql", checkpoint}, // any other application
		{stale, s.prefix + ".pulumi/locks/organization/paddock/dev/x.json"},
		{stale, s.prefix + ".pulumi/history/paddock/dev/dev-1.history.json"},
		{stale, s.prefix + ".pulumi/stacks/paddock/other.json"}, // a stack nobody fenced
	} {
		if err := write(ok.app, upsert, ok.key); err != nil {
			t.Errorf("%q writing %s: %v", ok.app, ok.key, err)
		}
	}
	// The fence is set up once, and again on a store opened later.
	s2, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.TakeFence(ctx, "paddock", "dev", "tokenb", "run-b", alive("")); err != nil {
		t.Errorf("the holder taking its fence again: %v", err)
	}
}

// A role with only the rights Pulumi needs on its table (no TRIGGER) cannot
// put the trigger on it: the fence is unavailable, and says why, rather
// than failing the run.
func TestFenceUnavailableWithoutTheTriggerRight(t *testing.T) {
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, sql := range []string{
		"CREATE TABLE pulumi_state (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())",
		"CREATE ROLE runner LOGIN PASSWORD 'runner-pw'",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON pulumi_state TO runner",
		"GRANT USAGE, CREATE ON SCHEMA public TO runner",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, _ := url.Parse(backend)
	u.User = url.UserPassword("runner", "runner-pw")
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.TakeFence(ctx, "paddock", "dev", "tokena", "run-a", func(string) bool { return false })
	var unavailable *state.FenceUnavailableError
	if !errors.As(err, &unavailable) || !strings.Contains(err.Error(), "TRIGGER on") {
		t.Fatalf("taking the fence without the TRIGGER right: %v", err)
	}
	if strings.Contains(err.Error(), "runner-pw") {
		t.Errorf("the error names the password: %v", err)
	}
}
