package filestate

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

func swapStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	u, _ := url.Parse("file://" + root)
	return Open(u, u.String()), root
}

// leftovers are the files in the stack's directory other than its
// checkpoint: a refused or failed write must leave none.
func leftovers(t *testing.T, root string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(root, ".pulumi", "stacks", projectName))
	var out []string
	for _, e := range ents {
		if e.Name() != "s.json" && e.Name() != "s.json.bak" {
			out = append(out, e.Name())
		}
	}
	return out
}

// A checkpoint written between a run's read and its write is never
// overwritten: the run's write is refused, and the other writer's bytes
// stay whole.
func TestFileSwapRefusesAWriteBetweenReadAndWrite(t *testing.T) {
	s, root := swapStore(t)
	ctx := context.Background()
	key := state.CheckpointKey(projectName, "s")

	// The first write: the stack has no checkpoint yet.
	v1, err := s.SwapCheckpoint(ctx, projectName, "s", key, []byte(`{"v":1}`), state.CheckpointVersion{})
	if err != nil {
		t.Fatal(err)
	}
	// A second "first" write finds one: refused.
	_, err = s.SwapCheckpoint(ctx, projectName, "s", key, []byte(`{"v":"again"}`), state.CheckpointVersion{})
	var changed *state.CheckpointChangedError
	if !errors.As(err, &changed) {
		t.Fatalf("a first write over an existing checkpoint: %v", err)
	}

	raw, read, err := s.RawCheckpoint(ctx, projectName, "s")
	if err != nil || string(raw) != `{"v":1}` || read != v1 {
		t.Fatalf("read back %q %+v %v, want v1 %+v", raw, read, err, v1)
	}
	// Another writer (runner B, or a hand-run pulumi) writes meanwhile.
	file := filepath.Join(root, filepath.FromSlash(key))
	if err := os.WriteFile(file, []byte(`{"v":"B"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file+".attrs", []byte(`{"md5":"B"}`), 0o600)
	_, err = s.SwapCheckpoint(ctx, projectName, "s", key, []byte(`{"v":"A"}`), read)
	if !errors.As(err, &changed) || !strings.Contains(err.Error(), "no longer the one this run last read or wrote") {
		t.Fatalf("a write over B's checkpoint: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != `{"v":"B"}` {
		t.Fatalf("B's checkpoint became %q", b)
	}
	if b, _ := os.ReadFile(file + ".attrs"); string(b) != `{"md5":"B"}` {
		t.Errorf("B's sidecar became %q", b)
	}
	if l := leftovers(t, root); len(l) != 1 || l[0] != "s.json.attrs" {
		t.Errorf("files left beside the checkpoint: %v", l)
	}

	// Over what it read, the write goes through, and drops the sidecar that
	// described the old bytes.
	_, now, _ := s.RawCheckpoint(ctx, projectName, "s")
	v3, err := s.SwapCheckpoint(ctx, projectName, "s", key, []byte(`{"v":3}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != `{"v":3}` || v3.Tag == now.Tag || v3.Key != key {
		t.Fatalf("after the write: %q %+v", b, v3)
	}
	if l := leftovers(t, root); len(l) != 0 {
		t.Errorf("files left beside the checkpoint: %v", l)
	}
	if b, _ := os.ReadFile(file + ".bak"); string(b) != `{"v":"B"}` {
		t.Errorf("the checkpoint replaced was kept as %q, want B's", b)
	}
	// A key that is not one of the stack's checkpoints is no write at all.
	if _, err := s.SwapCheckpoint(ctx, projectName, "s", ".pulumi/meta.yaml", []byte("x"), v3); err == nil {
		t.Error("wrote a key that is not the stack's checkpoint")
	}
}

// Runners racing from one read: exactly one write lands, the others are
// refused, and the checkpoint is the winner's, whole.
func TestFileSwapConcurrentWritersOneWins(t *testing.T) {
	s, root := swapStore(t)
	ctx := context.Background()
	key := state.CheckpointKey(projectName, "s")
	v0, err := s.SwapCheckpoint(ctx, projectName, "s", key, []byte(`{"v":0}`), state.CheckpointVersion{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	won := make(chan string, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := strings.Repeat(string(rune('a'+i)), 1<<16)
			// Each its own store, as each runner opens its own.
			u, _ := url.Parse("file://" + root)
			if _, err := Open(u, u.String()).SwapCheckpoint(ctx, projectName, "s", key, []byte(body), v0); err != nil {
				errs <- err
				return
			}
			won <- body
		}()
	}
	wg.Wait()
	close(won)
	close(errs)
	var winners []string
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d writes landed, want exactly one", len(winners))
	}
	for err := range errs {
		var changed *state.CheckpointChangedError
		if !errors.As(err, &changed) {
			t.Errorf("a losing write failed otherwise: %v", err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(key))); string(b) != winners[0] {
		t.Errorf("the checkpoint is not the winner's whole (%d bytes)", len(b))
	}
	if l := leftovers(t, root); len(l) != 0 {
		t.Errorf("files left beside the checkpoint: %v", l)
	}
}

// The swap lock excludes: a writer waits while another holds it, and gives
// up when its context ends.
func TestFileSwapWaitsForTheLock(t *testing.T) {
	s, _ := swapStore(t)
	key := state.CheckpointKey(projectName, "s")
	unlock, err := s.lockSwap(context.Background(), projectName, "s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.SwapCheckpoint(ctx, projectName, "s", key, []byte("{}"), state.CheckpointVersion{}); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write while another holds the swap lock: %v", err)
	}
	unlock()
	if _, err := s.SwapCheckpoint(context.Background(), projectName, "s", key, []byte("{}"), state.CheckpointVersion{}); err != nil {
		t.Fatal(err)
	}
}

func TestFileUpdateFilesAreWrittenBesidePulumis(t *testing.T) {
	s, root := swapStore(t)
	ctx := context.Background()
	for _, kind := range []string{state.UpdateHistory, state.UpdateBackups} {
		if err := s.PutUpdateFile(ctx, kind, projectName, "s", "s-1.json", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, ".pulumi", kind, projectName, "s", "s-1.json")); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b"} {
		if err := s.PutUpdateFile(ctx, state.UpdateHistory, projectName, "s", bad, nil); err == nil {
			t.Errorf("history file %q was written", bad)
		}
	}
	if err := s.PutUpdateFile(ctx, "stacks", projectName, "s", "s.json", nil); err == nil {
		t.Error("a file of another kind was written")
	}
}
