package pgstate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paddock-platform/paddock/internal/state"
)

// This file is the fence that makes PostgreSQL itself refuse a stack's
// checkpoint from a Paddock run that no longer holds the stack. Pulumi's CLI
// writes the checkpoint (one upsert into its state table), so Paddock cannot
// check in its write path; the database can. A table beside Pulumi's
// (paddock_fence) holds, per stack, the token of the run that holds it, and
// a trigger on Pulumi's table refuses a write or delete of the stack's
// checkpoint keys when the writing session names another Paddock token. The
// session names its token in its application_name (paddock-fence:<token>),
// which the CLI's driver (lib/pq) takes from PGAPPNAME: FenceEnv. A session
// without one (a hand-run `pulumi up`, an older Paddock) passes, as does a
// backend URL that sets application_name itself, which the driver prefers
// over the environment.

const (
	fenceTableName = "paddock_fence"
	fenceFuncName  = "paddock_fence_check"
	fenceTrigger   = "paddock_fence"
	// fenceAppPrefix begins the application_name of a fenced session.
	fenceAppPrefix = "paddock-fence:"
)

// fenceLockID serializes the fence's setup across runners (an advisory
// lock): two CREATE OR REPLACE FUNCTION at once can fail each other.
const fenceLockID = 0x70616464 // "padd"

func (s *Store) schemaQualified(name string) string {
	if schema, _, ok := strings.Cut(s.table, "."); ok {
		return schema + "." + name
	}
	return name
}

// stackKey is the fence's key of a stack: its checkpoint's key without the
// extension, as the trigger derives it from any of the checkpoint's keys.
func (s *Store) stackKey(project, stack string) string {
	return s.prefix + strings.TrimSuffix(state.CheckpointKey(project, stack), ".json")
}

// ensureFence creates the fence table, its trigger function and the trigger
// on Pulumi's table, once per store.
func (s *Store) ensureFence(ctx context.Context) error {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	if s.fenced {
		return nil
	}
	var exists *string
	if err := s.pool.QueryRow(ctx, "SELECT to_regclass($1)::text", s.table).Scan(&exists); err != nil {
		return fmt.Errorf("setting up the fence in %s: %w", s.where, s.Scrub(err))
	}
	if exists == nil {
		return &state.FenceUnavailableError{Reason: "Pulumi's state table does not exist yet"}
	}
	fence, fn := s.schemaQualified(fenceTableName), s.schemaQualified(fenceFuncName)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(fenceLockID)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+fence+` (
	stack_key TEXT PRIMARY KEY,
	token     TEXT NOT NULL,
	run_key   TEXT NOT NULL,
	taken_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)`); err != nil {
			return err
		}
		// The checkpoint keys are <stack key>.json, .json.gz and .json.zst;
		// locks and history end in .json too, but name no fenced stack.
		if _, err := tx.Exec(ctx, `CREATE OR REPLACE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $fence$
DECLARE
	app  text := coalesce(current_setting('application_name', true), '');
	k    text;
	held text;
	run  text;
BEGIN
	IF left(app, `+fmt.Sprint(len(fenceAppPrefix))+`) <> '`+fenceAppPrefix+`' THEN
		RETURN coalesce(NEW, OLD);
	END IF;
	IF TG_OP = 'DELETE' THEN k := OLD.key; ELSE k := NEW.key; END IF;
	IF k !~ '\.json(\.gz|\.zst)?$' THEN
		RETURN coalesce(NEW, OLD);
	END IF;
	SELECT token, run_key INTO held, run FROM `+fence+` WHERE stack_key = regexp_replace(k, '\.json(\.gz|\.zst)?$', '');
	IF held IS NOT NULL AND held <> substr(app, `+fmt.Sprint(len(fenceAppPrefix)+1)+`) THEN
		RAISE EXCEPTION 'paddock fence: the write of % is refused: the Paddock run making it no longer holds the stack (its lease lapsed; run % holds it now), so its checkpoint would overwrite that run''s; run paddock up again', k, run;
	END IF;
	RETURN coalesce(NEW, OLD);
END
$fence$`); err != nil {
			return err
		}
		var has bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = $1 AND tgrelid = $2::regclass)", fenceTrigger, s.table).Scan(&has); err != nil {
			return err
		}
		if has {
			return nil
		}
		// EXECUTE PROCEDURE: the spelling every server Pulumi supports takes.
		_, err := tx.Exec(ctx, "CREATE TRIGGER "+fenceTrigger+" BEFORE INSERT OR UPDATE OR DELETE ON "+s.table+" FOR EACH ROW EXECUTE PROCEDURE "+fn+"()")
		return err
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42P01") {
			return &state.FenceUnavailableError{Reason: fmt.Sprintf("the database role may not set up the fence (%s): it needs CREATE on the schema (for the table %s and its function) and TRIGGER on Pulumi's table %s", s.ScrubText(pgErr.Message), fence, s.table)}
		}
		return fmt.Errorf("setting up the fence in %s: %w", s.where, s.Scrub(err))
	}
	s.fenced = true
	return nil
}

func (s *Store) TakeFence(ctx context.Context, project, stack, token, runKey string, holderAlive func(runKey string) bool) error {
	if err := s.ensureFence(ctx); err != nil {
		return err
	}
	fence, key := s.schemaQualified(fenceTableName), s.stackKey(project, stack)
	// Compare and swap: the fence changes hands only from the token read,
	// so of two runners taking it from a dead run one wins.
	for range 3 {
		var held, heldRun string
		err := s.pool.QueryRow(ctx, "SELECT token, run_key FROM "+fence+" WHERE stack_key = $1", key).Scan(&held, &heldRun)
		var tag pgconn.CommandTag
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			tag, err = s.pool.Exec(ctx, "INSERT INTO "+fence+" (stack_key, token, run_key) VALUES ($1, $2, $3) ON CONFLICT (stack_key) DO NOTHING", key, token, runKey)
		case err != nil:
		case held == token:
			return nil
		case heldRun != runKey && holderAlive(heldRun):
			return &state.FenceHeldError{RunKey: heldRun}
		default:
			tag, err = s.pool.Exec(ctx, "UPDATE "+fence+" SET token = $2, run_key = $3, taken_at = now() WHERE stack_key = $1 AND token = $4", key, token, runKey, held)
		}
		if err != nil {
			return fmt.Errorf("taking the stack's fence in %s: %w", s.where, s.Scrub(err))
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
	}
	return &state.FenceHeldError{RunKey: "of another runner taking it at the same time"}
}

func (s *Store) ReleaseFence(ctx context.Context, project, stack, token string) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM "+s.schemaQualified(fenceTableName)+" WHERE stack_key = $1 AND token = $2", s.stackKey(project, stack), token)
	if err != nil && !missingTable(err) {
		return fmt.Errorf("releasing the stack's fence in %s: %w", s.where, s.Scrub(err))
	}
	return nil
}

// FenceEnv names the token in the application_name of the CLI's sessions.
// PostgreSQL keeps at most 63 bytes of it: the token is short.
func (s *Store) FenceEnv(token string) map[string]string {
	return map[string]string{"PGAPPNAME": fenceAppPrefix + token}
}
