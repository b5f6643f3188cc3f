package pgstate

import (
	"context"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/pgtest"
)

// The store on a real PostgreSQL, on its own: a stack with no state yet has
// no checkpoint and no locks; a run record written is listed for its stack
// alone, its lease renews, and it goes when removed. Nothing it says names
// the password.
func TestStoreOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if _, where, found, err := s.Checkpoint(ctx, "paddock", "dev"); err != nil || found {
		t.Fatalf("checkpoint of a new stack: found %v, %v", found, err)
	} else if srv.Password != "" && strings.Contains(where, srv.Password) {
		t.Errorf("where names the password: %s", where)
	}
	if locks, err := s.Locks(ctx, "paddock", "dev"); err != nil || len(locks) != 0 {
		t.Fatalf("locks of a new stack: %v, %v", locks, err)
	}

	// Pulumi makes the state table on its first write: before it, a lock
	// cannot be written, and the error says which table is missing.
	if _, err := s.AddLock(ctx, "paddock", "dev", []byte(`{"pid":1}`)); err == nil || !strings.Contains(err.Error(), "pulumi_state") {
		t.Errorf("a lock with no state table: %v", err)
	} else if srv.Password != "" && strings.Contains(err.Error(), srv.Password) {
		t.Errorf("the error names the password: %v", err)
	}

	// The run journal keeps a table of its own, made on first use.
	run, err := s.PutRun(ctx, "paddock", "dev", "run-1", []byte(`{"op":"up"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RenewRun(ctx, run); err != nil {
		t.Fatalf("renewing a live record: %v", err)
	}
	runs, err := s.ListRuns(ctx, "paddock", "dev")
	if err != nil || len(runs) != 1 || runs[0].Key != run || !strings.Contains(string(runs[0].Body), `"up"`) {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	if other, _ := s.ListRuns(ctx, "paddock", "prod"); len(other) != 0 {
		t.Errorf("another stack sees the record: %+v", other)
	}
	if err := s.DeleteRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewRun(ctx, run); err == nil {
		t.Error("a deleted record's lease renewed")
	}
}
