package s3state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/gcerrors"

	"github.com/paddock-platform/paddock/internal/state"
)

// The conditional checkpoint write of an s3:// backend
// (state.CheckpointSwapper): a PutObject with If-Match on the ETag the
// writer last read or wrote, or If-None-Match: * when the stack had no
// checkpoint. The server compares and writes as one step, so a write
// between a runner's read and its write is refused (412 Precondition
// Failed), and an object is only ever replaced whole.

var _ state.CheckpointSwapper = (*Store)(nil)

// latest is the key of the checkpoint variant Pulumi reads (the most
// recently written; on a tie the later one), "" when the stack has none.
func (s *Store) latest(ctx context.Context, project, stack string) (string, error) {
	best, bestTime := "", time.Time{}
	for _, key := range state.CheckpointVariants(project, stack) {
		attrs, err := s.bucket.Attributes(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading the state from %s: %w", s.where, s.Scrub(err))
		}
		if best == "" || !attrs.ModTime.Before(bestTime) {
			best, bestTime = key, attrs.ModTime
		}
	}
	return best, nil
}

func (s *Store) RawCheckpoint(ctx context.Context, project, stack string) ([]byte, state.CheckpointVersion, error) {
	key, err := s.latest(ctx, project, stack)
	if err != nil || key == "" {
		return nil, state.CheckpointVersion{}, err
	}
	full := s.prefix + key
	got, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.name, Key: &full})
	if s3NotFound(err) {
		return nil, state.CheckpointVersion{}, nil // removed meanwhile
	}
	if err != nil {
		return nil, state.CheckpointVersion{}, fmt.Errorf("reading the state from %s: %w", s.at(key), s.Scrub(err))
	}
	defer got.Body.Close()
	raw, err := io.ReadAll(got.Body)
	if err != nil {
		return nil, state.CheckpointVersion{}, fmt.Errorf("reading the state from %s: %w", s.at(key), s.Scrub(err))
	}
	etag := deref(got.ETag)
	if etag == "" {
		return nil, state.CheckpointVersion{}, fmt.Errorf("reading the state from %s: the server sent no ETag, which a conditional write needs", s.at(key))
	}
	return raw, state.CheckpointVersion{Key: key, Tag: etag}, nil
}

func (s *Store) SwapCheckpoint(ctx context.Context, project, stack, key string, raw []byte, old state.CheckpointVersion) (state.CheckpointVersion, error) {
	if !isVariant(project, stack, key) {
		return state.CheckpointVersion{}, fmt.Errorf("%s is not a checkpoint of stack %s/%s", key, project, stack)
	}
	if !old.None() && key != old.Key {
		return state.CheckpointVersion{}, fmt.Errorf("the checkpoint of stack %s/%s moved from %s to %s: Paddock keeps the key it read", project, stack, old.Key, key)
	}
	full := s.prefix + key
	in := &s3.PutObjectInput{Bucket: &s.name, Key: &full, Body: bytes.NewReader(raw), ContentType: ptr("application/json")}
	if old.None() {
		in.IfNoneMatch = ptr("*")
	} else {
		in.IfMatch = ptr(old.Tag)
	}
	out, err := s.client.PutObject(ctx, in)
	if refused(err) {
		return state.CheckpointVersion{}, &state.CheckpointChangedError{Where: s.at(key)}
	}
	if err != nil {
		return state.CheckpointVersion{}, fmt.Errorf("writing the checkpoint to %s: %w", s.at(key), s.Scrub(err))
	}
	etag := deref(out.ETag)
	if etag == "" {
		return state.CheckpointVersion{}, fmt.Errorf("writing the checkpoint to %s: the server sent no ETag, which the next conditional write needs", s.at(key))
	}
	return state.CheckpointVersion{Key: key, Tag: etag}, nil
}

// refused reports whether a conditional write failed on its condition:
// 412, or 409 when another conditional write of the key was in flight.
func refused(err error) bool {
	switch s3Code(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed
}

func isVariant(project, stack, key string) bool {
	for _, v := range state.CheckpointVariants(project, stack) {
		if key == v {
			return true
		}
	}
	return false
}

func (s *Store) PutUpdateFile(ctx context.Context, kind, project, stack, name string, raw []byte) error {
	key := state.UpdateFileKey(kind, project, stack, name)
	if key == "" || name == "" {
		return fmt.Errorf("%q is not a file of the stack's %s", name, kind)
	}
	if err := s.bucket.WriteAll(ctx, key, raw, nil); err != nil {
		return fmt.Errorf("writing the stack's %s to %s: %w", kind, s.at(key), s.Scrub(err))
	}
	return nil
}
