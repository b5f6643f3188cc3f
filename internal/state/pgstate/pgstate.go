// Package pgstate is Pulumi's PostgreSQL DIY backend (postgres://, Pulumi
// v3.177+) as Paddock reads it. Pulumi keeps every object of a DIY backend as
// one row of its state table (?table=, default pulumi_state): key is the
// object's path (the same paths as on file://, after the URL's path: the
// database name and a slash), data is JSON {"data": <base64 of the object's
// bytes>}, updated_at when it was last written. Paddock reads the checkpoint
// and the update locks from those rows and writes a lock the same way, so
// Pulumi and Paddock see each other's locks. Paddock's run journal is a table
// of its own beside it (paddock_runs), created on first use; its leases are
// timed by the database's clock.
package pgstate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paddock-platform/paddock/internal/state"
)

const runsTableName = "paddock_runs"

// pgIdentifier is a table name as Pulumi puts it in its SQL, unquoted: a
// name or schema.name. Anything else is refused rather than quoted, since
// quoting would name another table than Pulumi's.
var pgIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$`)

// Store is a postgres:// backend.
type Store struct {
	pool      *pgxpool.Pool
	table     string // Pulumi's state table
	runsTable string
	where     string // the database, without credentials
	state.SecretText
	// prefix is what Pulumi puts before every key of a bucket-like backend:
	// the URL's path (here the database name) and a slash.
	prefix string

	fenceMu sync.Mutex
	fenced  bool // the fence is set up (fence.go)
}

// Open connects to the database of a postgres:// backend URL. Its errors
// never hold the URL's password.
func Open(ctx context.Context, backend string) (*Store, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, errors.New("the postgres:// backend URL does not parse")
	}
	var secrets []string
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	q := u.Query()
	table := q.Get("table")
	if table == "" {
		table = "pulumi_state" // Pulumi's default
	}
	if !pgIdentifier.MatchString(table) {
		return nil, fmt.Errorf("the postgres:// backend's table %q is not a plain [schema.]name", table)
	}
	q.Del("table") // Pulumi's own parameter, unknown to the server
	for key, values := range q {
		if !state.SecretParam(key) { // ?password=, ?sslpassword=, in any case
			continue
		}
		for _, v := range values {
			if v != "" {
				secrets = append(secrets, v, url.QueryEscape(v), url.PathEscape(v))
			}
		}
	}
	u.RawQuery = q.Encode()
	runsTable := runsTableName
	if schema, _, ok := strings.Cut(table, "."); ok {
		runsTable = schema + "." + runsTableName
	}
	s := &Store{table: table, runsTable: runsTable, SecretText: secrets}
	if sub := strings.TrimLeft(u.Path, "/"); sub != "" {
		s.prefix = strings.TrimSuffix(sub, "/") + "/"
	}
	s.where = s.ScrubText(fmt.Sprintf("postgres://%s%s (table %s)", u.Host, u.Path, table))

	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("the postgres:// backend URL: %w", s.Scrub(err))
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.where, s.Scrub(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to %s: %w", s.where, s.Scrub(err))
	}
	s.pool = pool
	return s, nil
}

func (s *Store) Close() { s.pool.Close() }

// missingTable reports whether err is a table that does not exist: no stack
// (Pulumi creates its table at login) or no run recorded yet.
func missingTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// blob decodes a row's data as Pulumi wrote it.
func blob(data string) ([]byte, error) {
	var d struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(d.Data)
}

func (s *Store) Checkpoint(ctx context.Context, project, stack string) ([]byte, string, bool, error) {
	// Like Pulumi: of the variants present, the most recently written (on a
	// tie the later key, as its listing in key order keeps the last).
	var key, data string
	keys := state.CheckpointVariants(project, stack)
	for i := range keys {
		keys[i] = s.prefix + keys[i]
	}
	err := s.pool.QueryRow(ctx,
		"SELECT key, data::text FROM "+s.table+" WHERE key = ANY($1) ORDER BY updated_at DESC, key DESC LIMIT 1",
		keys).Scan(&key, &data)
	if errors.Is(err, pgx.ErrNoRows) || missingTable(err) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("reading the state from %s: %w", s.where, s.Scrub(err))
	}
	where := s.where + " key " + key
	raw, err := blob(data)
	if err != nil {
		return nil, where, true, err
	}
	out, err := state.DecodeCompressed(key, raw)
	return out, where, true, err
}

func (s *Store) Locks(ctx context.Context, project, stack string) ([]state.Lock, error) {
	rows, err := s.pool.Query(ctx, "SELECT key, data::text FROM "+s.table+" WHERE starts_with(key, $1) ORDER BY key", s.prefix+state.LockPrefix(project, stack))
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stack's locks from %s: %w", s.where, s.Scrub(err))
	}
	defer rows.Close()
	var out []state.Lock
	for rows.Next() {
		var key, data string
		if err := rows.Scan(&key, &data); err != nil {
			return nil, s.Scrub(err)
		}
		if !strings.HasSuffix(key, ".json") {
			continue
		}
		b, err := blob(data)
		if err != nil {
			continue
		}
		l, ok := state.ParseLock(b)
		if !ok {
			continue
		}
		l.File = key
		out = append(out, l)
	}
	if err := rows.Err(); err != nil && !missingTable(err) {
		return nil, fmt.Errorf("reading the stack's locks from %s: %w", s.where, s.Scrub(err))
	}
	return out, nil
}

func (s *Store) AddLock(ctx context.Context, project, stack string, body []byte) (string, error) {
	key := s.prefix + state.LockPrefix(project, stack) + state.NewLockID() + ".json"
	data, err := json.Marshal(struct {
		Data string `json:"data"`
	}{base64.StdEncoding.EncodeToString(body)})
	if err != nil {
		return "", err
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO "+s.table+" (key, data) VALUES ($1, $2::json)", key, string(data)); err != nil {
		return "", fmt.Errorf("writing the stack's lock to %s: %w", s.where, s.Scrub(err))
	}
	return key, nil
}

func (s *Store) RemoveLock(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM "+s.table+" WHERE key = $1", key); err != nil {
		return fmt.Errorf("removing the lock %s from %s: %w", key, s.where, s.Scrub(err))
	}
	return nil
}

func (s *Store) JournalWhere(project, stack string) string {
	return fmt.Sprintf("%s table %s, stack %s/%s", strings.TrimSuffix(s.where, " (table "+s.table+")"), s.runsTable, project, stack)
}

// ensureRunsTable creates the journal's table when it is missing. Checking
// first lets a role without CREATE use a table that exists; two runners
// creating it at once leave one table, and the loser finds it there.
func (s *Store) ensureRunsTable(ctx context.Context) error {
	var exists *string
	if err := s.pool.QueryRow(ctx, "SELECT to_regclass($1)::text", s.runsTable).Scan(&exists); err != nil {
		return s.Scrub(err)
	}
	if exists != nil {
		return nil
	}
	_, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.runsTable+` (
	key        TEXT PRIMARY KEY,
	project    TEXT NOT NULL,
	stack      TEXT NOT NULL,
	record     JSONB NOT NULL,
	renewed_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`)
	if err == nil {
		_, err = s.pool.Exec(ctx, "CREATE INDEX IF NOT EXISTS "+runsTableName+"_stack_idx ON "+s.runsTable+" (project, stack)")
	}
	if err != nil {
		if s.pool.QueryRow(ctx, "SELECT to_regclass($1)::text", s.runsTable).Scan(&exists) == nil && exists != nil {
			return nil
		}
		return s.Scrub(err)
	}
	return nil
}

func (s *Store) PutRun(ctx context.Context, project, stack, id string, body []byte) (string, error) {
	if err := s.ensureRunsTable(ctx); err != nil {
		return "", fmt.Errorf("creating the run journal %s: %w", s.JournalWhere(project, stack), err)
	}
	key := project + "/" + stack + "/" + id
	_, err := s.pool.Exec(ctx, "INSERT INTO "+s.runsTable+" (key, project, stack, record) VALUES ($1, $2, $3, $4::jsonb)", key, project, stack, string(body))
	if err != nil {
		return "", fmt.Errorf("writing the run record to %s: %w", s.JournalWhere(project, stack), s.Scrub(err))
	}
	return key, nil
}

func (s *Store) RenewRun(ctx context.Context, key string) error {
	tag, err := s.pool.Exec(ctx, "UPDATE "+s.runsTable+" SET renewed_at = now() WHERE key = $1", key)
	if err != nil {
		return fmt.Errorf("renewing the run record %s: %w", key, s.Scrub(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("the run record %s is gone: %w", key, state.ErrRunGone)
	}
	return nil
}

func (s *Store) ListRuns(ctx context.Context, project, stack string) ([]state.StoredRun, error) {
	rows, err := s.pool.Query(ctx,
		"SELECT key, record::text, extract(epoch FROM now() - renewed_at)::float8 FROM "+s.runsTable+" WHERE project = $1 AND stack = $2 ORDER BY key",
		project, stack)
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run journal %s: %w", s.JournalWhere(project, stack), s.Scrub(err))
	}
	defer rows.Close()
	var out []state.StoredRun
	for rows.Next() {
		var key, body string
		var age float64
		if err := rows.Scan(&key, &body, &age); err != nil {
			return nil, s.Scrub(err)
		}
		out = append(out, state.StoredRun{Key: key, Body: []byte(body), Age: time.Duration(age * float64(time.Second))})
	}
	if err := rows.Err(); err != nil && !missingTable(err) {
		return nil, fmt.Errorf("reading the run journal %s: %w", s.JournalWhere(project, stack), s.Scrub(err))
	}
	return out, nil
}

func (s *Store) DeleteRun(ctx context.Context, key string) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM "+s.runsTable+" WHERE key = $1", key)
	if err != nil && !missingTable(err) {
		return fmt.Errorf("removing the run record %s: %w", key, s.Scrub(err))
	}
	return nil
}
