// Package s3state is Pulumi's DIY backend in an S3 bucket (s3://) as Paddock
// reads it. The bucket is opened the way Pulumi opens it: through gocloud.dev's
// s3blob (the version Pulumi's CLI is built with, checked by pins' tests), so
// every query parameter means what it means to Pulumi (region, endpoint,
// profile, use_path_style or s3ForcePathStyle, disable_https, prefix, the
// checksum settings...) and credentials come from the same AWS SDK chain
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE,
// AWS_REGION...). Before that, the URL gets the rewrites Pulumi gives it
// (s3LegacyParams), and after it the URL's path becomes a key prefix, as
// Pulumi adds it: s3://bucket/team/a keeps the checkpoint at
// team/a/.pulumi/stacks/<project>/<stack>.json.
//
// The run journal is beside it under <prefix>.paddock/runs/, where Pulumi
// never looks, one object per run.
package s3state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	gcblob "gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3:// in gcblob.DefaultURLMux, as in Pulumi
	"gocloud.dev/gcerrors"

	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
)

// Store is an s3:// backend.
type Store struct {
	// bucket is Pulumi's view of the bucket: its keys are Pulumi's paths.
	bucket *gcblob.Bucket
	// client, name and prefix reach the same objects directly, for the
	// journal: conditional writes and the server's clock, which the blob
	// API does not show. prefix is every prefix Pulumi puts before its
	// paths (the prefix parameter, then the URL's path and a slash).
	client *s3.Client
	name   string
	prefix string
	where  string // the bucket and path, without the query
	state.SecretText

	// onRunner is where this runner kept the bucket's run records before
	// Paddock read buckets ($PADDOCK_HOME/runs): still read, and removed once
	// dealt with, so a run that died before an upgrade is found.
	onRunner *filestate.Store

	mu sync.Mutex
	// runs is this store's own records: the body and ETag last written,
	// so a renewal rewrites exactly that object or fails.
	runs map[string]s3Run
}

type s3Run struct {
	body []byte
	etag string
}

// s3LegacyParams gives an s3:// URL the rewrites Pulumi's DIY backend makes
// before opening it (for URLs written for the older SDK): disableSSL becomes
// disable_https (or is dropped when the endpoint names its scheme), an
// endpoint without a scheme gets https:// (http:// with disableSSL=true),
// and with any endpoint (a store that is not AWS) request checksums are
// only sent where required, unless the URL or
// AWS_REQUEST_CHECKSUM_CALCULATION says otherwise.
func s3LegacyParams(u *url.URL) error {
	q := u.Query()
	plainHTTP := false
	if vals, ok := q["disableSSL"]; ok {
		v, err := strconv.ParseBool(vals[len(vals)-1])
		if err != nil {
			return fmt.Errorf("the s3:// backend URL's disableSSL is not a boolean")
		}
		plainHTTP = v
		q.Del("disableSSL")
		if !strings.Contains(q.Get("endpoint"), "://") {
			q.Set("disable_https", strconv.FormatBool(v))
		}
	}
	if ep := q.Get("endpoint"); ep != "" {
		if !strings.Contains(ep, "://") {
			if plainHTTP {
				q.Set("endpoint", "http://"+ep)
			} else {
				q.Set("endpoint", "https://"+ep)
			}
		}
		if q.Get("request_checksum_calculation") == "" && os.Getenv("AWS_REQUEST_CHECKSUM_CALCULATION") == "" {
			q.Set("request_checksum_calculation", "when_required")
		}
	}
	u.RawQuery = q.Encode()
	return nil
}

// Open opens the bucket of an s3:// backend URL. Nothing is sent to the
// server until the first read.
func Open(ctx context.Context, backend string) (*Store, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, errors.New("the s3:// backend URL does not parse")
	}
	s := &Store{name: u.Host, runs: map[string]s3Run{}, onRunner: filestate.OnRunner(backend)}
	// The keys the SDK may hold: never in a message.
	for _, env := range []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"} {
		if v := os.Getenv(env); len(v) >= 4 {
			s.SecretText = append(s.SecretText, v)
		}
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			s.SecretText = append(s.SecretText, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	s.where = s.ScrubText("s3://" + u.Host + u.Path)
	if u.Host == "" {
		return nil, fmt.Errorf("the s3:// backend URL names no bucket (s3://BUCKET[/PATH]?region=...)")
	}
	if err := s3LegacyParams(u); err != nil {
		return nil, err
	}
	sub := strings.TrimLeft(u.Path, "/")
	if sub != "" && !strings.HasSuffix(sub, "/") {
		sub += "/"
	}
	s.prefix = u.Query().Get("prefix") + sub
	opened := *u
	opened.Path, opened.RawPath, opened.User = "", "", nil
	bucket, err := gcblob.DefaultURLMux().OpenBucket(ctx, opened.String())
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.where, s.Scrub(err))
	}
	if !bucket.As(&s.client) {
		bucket.Close()
		return nil, fmt.Errorf("opening %s: not an S3 bucket", s.where)
	}
	if sub != "" {
		bucket = gcblob.PrefixedBucket(bucket, sub)
	}
	s.bucket = bucket
	return s, nil
}

func (s *Store) Close() { s.bucket.Close() }

func (s *Store) at(key string) string { return s.where + " key " + key }

func (s *Store) Checkpoint(ctx context.Context, project, stack string) ([]byte, string, bool, error) {
	// Like Pulumi: of the variants present, the most recently written (on a
	// tie the later one, as with the other backends).
	best, err := s.latest(ctx, project, stack)
	if err != nil {
		return nil, "", false, err
	}
	if best == "" {
		return nil, "", false, nil
	}
	raw, err := s.bucket.ReadAll(ctx, best)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, "", false, nil // removed meanwhile
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("reading the state from %s: %w", s.at(best), s.Scrub(err))
	}
	data, err := state.DecodeCompressed(best, raw)
	return data, s.at(best), true, err
}

func (s *Store) Locks(ctx context.Context, project, stack string) ([]state.Lock, error) {
	// .pulumi/locks/<org>/<project>/<stack>/<lock id>.json, any org.
	it := s.bucket.List(&gcblob.ListOptions{Prefix: ".pulumi/locks/"})
	var out []state.Lock
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the stack's locks from %s: %w", s.where, s.Scrub(err))
		}
		parts := strings.Split(obj.Key, "/")
		if obj.IsDir || len(parts) != 6 || parts[3] != project || parts[4] != stack || !strings.HasSuffix(parts[5], ".json") {
			continue
		}
		b, err := s.bucket.ReadAll(ctx, obj.Key)
		if err != nil {
			continue // released meanwhile
		}
		l, ok := state.ParseLock(b)
		if !ok {
			continue
		}
		l.File = obj.Key
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

func (s *Store) AddLock(ctx context.Context, project, stack string, body []byte) (string, error) {
	key := state.LockPrefix(project, stack) + state.NewLockID() + ".json"
	if err := s.bucket.WriteAll(ctx, key, body, nil); err != nil {
		return "", fmt.Errorf("writing the stack's lock to %s: %w", s.where, s.Scrub(err))
	}
	return key, nil
}

func (s *Store) RemoveLock(ctx context.Context, key string) error {
	if err := s.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("removing the lock %s from %s: %w", key, s.where, s.Scrub(err))
	}
	return nil
}

// The journal.
//
// A bucket has no clock the runners share, and a runner's own clock may be
// off by any amount, so a lease's age is judged by the server alone: the
// LastModified it set when the record was last written, against the Date
// header of the same response that reads it. Both are the server's
// (whole seconds, far finer than a lease). LastModified is when the write
// began, so a slow write makes a lease look older, never younger. A record is renewed by writing it
// again, conditionally on its ETag (If-Match), so a renewal never brings
// back a record another runner removed as dead: it fails, and the run
// learns it. A server that ignores If-Match still gets a HEAD first, so only
// a removal between the two can be undone. A response without a Date is
// judged by this runner's clock, and a record without a LastModified is
// taken as expired: never alive forever.

func (s *Store) runsPrefix(project, stack string) string {
	return s.prefix + ".paddock/runs/" + url.PathEscape(project) + "/" + url.PathEscape(stack) + "/"
}

func (s *Store) JournalWhere(project, stack string) string {
	return "s3://" + s.name + "/" + s.ScrubText(s.runsPrefix(project, stack))
}

func (s *Store) PutRun(ctx context.Context, project, stack, id string, body []byte) (string, error) {
	key := s.runsPrefix(project, stack) + id + ".json"
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.name, Key: &key, Body: bytes.NewReader(body), ContentType: ptr("application/json"),
	})
	if err != nil {
		return "", fmt.Errorf("writing the run record to %s: %w", s.JournalWhere(project, stack), s.Scrub(err))
	}
	s.remember(key, body, out.ETag)
	return key, nil
}

func (s *Store) remember(key string, body []byte, etag *string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[key] = s3Run{body: body, etag: deref(etag)}
}

func (s *Store) RenewRun(ctx context.Context, key string) error {
	gone := fmt.Errorf("the run record s3://%s/%s is gone: %w", s.name, s.ScrubText(key), state.ErrRunGone)
	s.mu.Lock()
	run, ok := s.runs[key]
	s.mu.Unlock()
	if !ok {
		// Not written by this store: read what is there.
		got, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.name, Key: &key})
		if s3NotFound(err) {
			return gone
		}
		if err != nil {
			return fmt.Errorf("renewing the run record %s: %w", key, s.Scrub(err))
		}
		body, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			return fmt.Errorf("renewing the run record %s: %w", key, s.Scrub(err))
		}
		run = s3Run{body: body, etag: deref(got.ETag)}
	} else {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.name, Key: &key})
		if s3NotFound(err) {
			return gone
		}
		if err != nil {
			return fmt.Errorf("renewing the run record %s: %w", key, s.Scrub(err))
		}
	}
	in := &s3.PutObjectInput{Bucket: &s.name, Key: &key, Body: bytes.NewReader(run.body), ContentType: ptr("application/json")}
	if run.etag != "" {
		in.IfMatch = &run.etag
	}
	out, err := s.client.PutObject(ctx, in)
	if s3NotFound(err) || s3Code(err) == "PreconditionFailed" {
		s.mu.Lock()
		delete(s.runs, key)
		s.mu.Unlock()
		return gone
	}
	if err != nil {
		return fmt.Errorf("renewing the run record %s: %w", key, s.Scrub(err))
	}
	s.remember(key, run.body, out.ETag)
	return nil
}

func (s *Store) ListRuns(ctx context.Context, project, stack string) ([]state.StoredRun, error) {
	prefix := s.runsPrefix(project, stack)
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.name, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the run journal %s: %w", s.JournalWhere(project, stack), s.Scrub(err))
		}
		for _, obj := range page.Contents {
			k := deref(obj.Key)
			rest := strings.TrimPrefix(k, prefix)
			if strings.HasSuffix(rest, ".json") && !strings.Contains(rest, "/") {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	var out []state.StoredRun
	for _, key := range keys {
		got, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.name, Key: &key})
		if s3NotFound(err) {
			continue // its run ended meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading the run record %s: %w", key, s.Scrub(err))
		}
		body, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			body = nil // read as damaged
		}
		out = append(out, state.StoredRun{Key: key, Body: body, Age: leaseAge(got.LastModified, serverDate(got.ResultMetadata))})
	}
	local, err := s.onRunner.ListRuns(ctx, project, stack)
	return append(out, local...), err
}

// runnerKey reports whether key is a record kept on this runner.
func (s *Store) runnerKey(key string) bool {
	return filepath.IsAbs(key) && strings.HasPrefix(key, s.onRunner.RunsRoot()+string(filepath.Separator))
}

// leaseAge is how long before now (the server's) the record was last
// written; see the journal's comment above.
func leaseAge(written *time.Time, now time.Time) time.Duration {
	if written == nil || written.IsZero() {
		return state.LeaseExpiry
	}
	if now.IsZero() {
		now = time.Now()
	}
	if age := now.Sub(*written); age > 0 {
		return age
	}
	return 0
}

// serverDate is the Date header of the response that carried md.
func serverDate(md middleware.Metadata) time.Time {
	raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
	if !ok || raw == nil || raw.Response == nil {
		return time.Time{}
	}
	t, err := http.ParseTime(raw.Header.Get("Date"))
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s *Store) DeleteRun(ctx context.Context, key string) error {
	if s.runnerKey(key) {
		return s.onRunner.DeleteRun(ctx, key)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.name, Key: &key})
	if err != nil && !s3NotFound(err) {
		return fmt.Errorf("removing the run record %s: %w", key, s.Scrub(err))
	}
	s.mu.Lock()
	delete(s.runs, key)
	s.mu.Unlock()
	return nil
}

// s3Code is the S3 error code of err ("" for none).
func s3Code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func s3NotFound(err error) bool {
	if err == nil {
		return false
	}
	switch s3Code(err) {
	case "NoSuchKey", "NotFound":
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
