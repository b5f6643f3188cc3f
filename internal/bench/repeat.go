package bench

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
)

// repeated is what repeat keeps of a command run several times.
type repeated struct {
	runs     []float64 // wall seconds of each run, in order
	treePeak int64     // the highest memory of any run's process tree
}

// repeat runs the command newCmd makes n times, one after the other,
// measuring each (Measure). A command that could not be run stops it;
// check sees every run that ran with Measure's error (a non-zero exit:
// whether that is a failure is the caller's to say), and its error stops
// the repetition too.
func repeat(ctx context.Context, n int, newCmd func() *exec.Cmd, check func(cmd *exec.Cmd, r *Run, err error) error) (repeated, error) {
	var out repeated
	for range n {
		cmd := newCmd()
		r, err := Measure(ctx, cmd)
		if r == nil {
			if err == nil {
				err = fmt.Errorf("%s: not measured", cmd.Path)
			}
			return out, err
		}
		if err := check(cmd, r, err); err != nil {
			return out, err
		}
		out.runs = append(out.runs, r.Wall.Seconds())
		out.treePeak = max(out.treePeak, r.TreePeak)
	}
	return out, nil
}

// median is the middle of xs (the upper one of an even count), as every
// section keeps it.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	return sorted[len(sorted)/2]
}
