package s3state

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/internal/state"
)

// These run against SeaweedFS's S3 gateway (s3test): the conditional write
// is the server's, so only a real server shows it holds.

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.StopShared()
	os.Exit(code)
}

// swapBucket is a store on a bucket of its own, under path (may be empty),
// and a plain client of the server for the other writer.
func swapBucket(t *testing.T, path string) (*Store, *s3.Client, string) {
	t.Helper()
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	bucket := srv.NewBucket(t)
	s, err := Open(context.Background(), srv.BackendURL(bucket, path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, srv.Client(), bucket
}

func getObject(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	got, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	defer got.Body.Close()
	b, _ := io.ReadAll(got.Body)
	return string(b)
}

// A checkpoint written between a run's read and its write is never
// overwritten: the server refuses the run's If-Match, and the first write
// of a stack refuses with If-None-Match once one exists.
func TestS3SwapRefusesAWriteBetweenReadAndWrite(t *testing.T) {
	s, client, bucket := swapBucket(t, "team/a")
	ctx := context.Background()
	key := state.CheckpointKey("paddock", "s")
	full := "team/a/" + key

	raw, none, err := s.RawCheckpoint(ctx, "paddock", "s")
	if err != nil || raw != nil || !none.None() {
		t.Fatalf("a stack without a checkpoint: %q %+v %v", raw, none, err)
	}
	v1, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":1}`), none)
	if err != nil {
		t.Fatal(err)
	}
	// Runner B wrote the stack's first checkpoint meanwhile: If-None-Match.
	var changed *state.CheckpointChangedError
	if _, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":"again"}`), none); !errors.As(err, &changed) {
		t.Fatalf("a first write over an existing checkpoint: %v", err)
	}
	raw, read, err := s.RawCheckpoint(ctx, "paddock", "s")
	if err != nil || string(raw) != `{"v":1}` || read != v1 {
		t.Fatalf("read back %q %+v %v, want %+v", raw, read, err, v1)
	}
	// Another writer (runner B, or a hand-run pulumi) meanwhile.
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &full, Body: strings.NewReader(`{"v":"B"}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":"A"}`), read)
	if !errors.As(err, &changed) {
		t.Fatalf("a write over B's checkpoint: %v", err)
	}
	if got := getObject(t, client, bucket, full); got != `{"v":"B"}` {
		t.Fatalf("B's checkpoint became %q", got)
	}
	// Over what it read, the write goes through.
	_, now, err := s.RawCheckpoint(ctx, "paddock", "s")
	if err != nil {
		t.Fatal(err)
	}
	v3, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":3}`), now)
	if err != nil || v3.Tag == now.Tag {
		t.Fatalf("a write over what it read: %+v %v", v3, err)
	}
	if got := getObject(t, client, bucket, full); got != `{"v":3}` {
		t.Fatalf("the checkpoint is %q", got)
	}
	// And the next one chains on the ETag the write returned.
	if _, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":4}`), v3); err != nil {
		t.Fatal(err)
	}
}

// Runners racing from one read: exactly one write lands, and the object is
// the winner's, whole.
func TestS3SwapConcurrentWritersOneWins(t *testing.T) {
	s, client, bucket := swapBucket(t, "")
	ctx := context.Background()
	key := state.CheckpointKey("paddock", "s")
	v0, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(`{"v":0}`), state.CheckpointVersion{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	var losers []error
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := strings.Repeat(string(rune('a'+i)), 1<<18)
			_, err := s.SwapCheckpoint(ctx, "paddock", "s", key, []byte(body), v0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				losers = append(losers, err)
			} else {
				winners = append(winners, body)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d writes landed, want exactly one (refused: %v)", len(winners), losers)
	}
	for _, err := range losers {
		var changed *state.CheckpointChangedError
		if !errors.As(err, &changed) {
			t.Errorf("a losing write failed otherwise: %v", err)
		}
	}
	if got := getObject(t, client, bucket, key); got != winners[0] {
		t.Errorf("the checkpoint is not the winner's whole (%d bytes)", len(got))
	}
}

func TestS3UpdateFilesAreWrittenBesidePulumis(t *testing.T) {
	s, client, bucket := swapBucket(t, "")
	ctx := context.Background()
	if err := s.PutUpdateFile(ctx, state.UpdateHistory, "paddock", "s", "s-1.history.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if got := getObject(t, client, bucket, ".pulumi/history/paddock/s/s-1.history.json"); got != "{}" {
		t.Errorf("history file %q", got)
	}
	if err := s.PutUpdateFile(ctx, state.UpdateHistory, "paddock", "s", "../x", nil); err == nil {
		t.Error("a history name with a slash was written")
	}
}
