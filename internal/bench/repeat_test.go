package bench

import (
	"context"
	"errors"
	"os/exec"
	"testing"
)

func TestRepeat(t *testing.T) {
	ctx := context.Background()
	made := 0
	sh := func(script string) func() *exec.Cmd {
		return func() *exec.Cmd { made++; return exec.Command("sh", "-c", script) }
	}
	// Exit 2 is the caller's to judge: accepted here, every run is kept
	// (each long enough to be sampled a few times).
	var codes []int
	rep, err := repeat(ctx, 3, sh("sleep 0.2; exit 2"), func(cmd *exec.Cmd, r *Run, err error) error {
		codes = append(codes, cmd.ProcessState.ExitCode())
		return nil
	})
	if err != nil || len(rep.runs) != 3 || made != 3 || len(codes) != 3 || codes[0] != 2 {
		t.Fatalf("repeat of an accepted exit 2: %+v, %v, %d commands, codes %v", rep, err, made, codes)
	}
	if rep.treePeak <= 0 {
		t.Errorf("no memory sampled: %+v", rep)
	}
	// The first refusal stops it, with nothing of the refused run kept.
	made = 0
	stop := errors.New("refused")
	rep, err = repeat(ctx, 3, sh("true"), func(*exec.Cmd, *Run, error) error { return stop })
	if !errors.Is(err, stop) || len(rep.runs) != 0 || made != 1 {
		t.Errorf("a refused run: %+v, %v, %d commands", rep, err, made)
	}
	// A command that cannot start is an error whatever check says.
	_, err = repeat(ctx, 2, func() *exec.Cmd { return exec.Command("/nonexistent/paddock") }, func(*exec.Cmd, *Run, error) error { return nil })
	if err == nil {
		t.Error("a command that cannot start was measured")
	}
	if got := median([]float64{3, 1, 2, 5}); got != 3 {
		t.Errorf("median of 1 2 3 5 = %v, want the upper middle 3", got)
	}
}
