package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Fleet is drift over every stack of a project: one line a stack, one exit
// status for the scheduled job that runs it.
type Fleet struct {
	Stacks   []FleetStack  `json:"stacks"`
	Duration time.Duration `json:"durationNanos"`
	// Parallel is how many stacks were checked at once.
	Parallel int `json:"parallel"`
}

// FleetStack is one stack's outcome: its report, or why none could be made.
type FleetStack struct {
	Stack  string  `json:"stack"`
	Report *Report `json:"report,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Duration is this stack's whole check, spec load included.
	Duration time.Duration `json:"durationNanos"`
}

// Status is clean, drifted or error.
func (s FleetStack) Status() string {
	switch {
	case s.Error != "" || s.Report == nil:
		return "error"
	case s.Report.Drifted():
		return "drifted"
	default:
		return "clean"
	}
}

// Differences counts what the stack's report lists: resources of the stack
// that differ, and objects outside it that weaken the platform.
func (s FleetStack) Differences() int {
	if s.Report == nil {
		return 0
	}
	return len(s.Report.Resources) + len(s.Report.Unmanaged)
}

// Sort orders the stacks by name, so reports compare run to run.
func (f *Fleet) Sort() {
	sort.Slice(f.Stacks, func(i, j int) bool { return f.Stacks[i].Stack < f.Stacks[j].Stack })
}

// Count is how many stacks have status.
func (f *Fleet) Count(status string) int {
	n := 0
	for _, s := range f.Stacks {
		if s.Status() == status {
			n++
		}
	}
	return n
}

// ExitCode: 1 when any stack could not be checked (an unknown state is worse
// than a known drift), else 2 when any drifted, else 0.
func (f *Fleet) ExitCode() int {
	switch {
	case f.Count("error") > 0:
		return 1
	case f.Count("drifted") > 0:
		return 2
	}
	return 0
}

// Summary is the one-line outcome.
func (f *Fleet) Summary() string {
	return fmt.Sprintf("%d stacks: %d clean, %d drifted, %d could not be checked", len(f.Stacks), f.Count("clean"), f.Count("drifted"), f.Count("error"))
}

// WriteText prints a line a stack, then each drifted stack's own report.
func (f *Fleet) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "paddock drift --all: %s, in %.1fs (%d at once)\n\n", f.Summary(), f.Duration.Seconds(), f.Parallel)
	for _, s := range f.Stacks {
		fmt.Fprintf(&b, "  %-8s %-24s %s\n", s.Status(), s.Stack, fleetDetail(s))
	}
	for _, s := range f.Stacks {
		if s.Status() != "drifted" {
			continue
		}
		b.WriteString("\n")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		b.Reset()
		if err := s.Report.WriteText(w); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fleetDetail(s FleetStack) string {
	switch s.Status() {
	case "error":
		return oneLine(s.Error)
	case "drifted":
		return fmt.Sprintf("%d difference(s): %s (%.1fs)", s.Differences(), s.Report.Summary(), s.Duration.Seconds())
	default:
		return fmt.Sprintf("%d resources compared (%.1fs)", s.Report.Checked, s.Duration.Seconds())
	}
}

// WriteJSON writes the whole fleet, each stack's report included.
func (f *Fleet) WriteJSON(w io.Writer) error {
	type stackJSON struct {
		FleetStack
		Status      string `json:"status"`
		Differences int    `json:"differences"`
	}
	out := struct {
		Summary  string        `json:"summary"`
		Stacks   []stackJSON   `json:"stacks"`
		Duration time.Duration `json:"durationNanos"`
		Parallel int           `json:"parallel"`
		Exit     int           `json:"exitCode"`
	}{Summary: f.Summary(), Stacks: []stackJSON{}, Duration: f.Duration, Parallel: f.Parallel, Exit: f.ExitCode()}
	for _, s := range f.Stacks {
		out.Stacks = append(out.Stacks, stackJSON{FleetStack: s, Status: s.Status(), Differences: s.Differences()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteMarkdown renders a table for a CI job summary, then each drifted
// stack's own report.
func (f *Fleet) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Paddock drift across %d stacks\n\n%s, in %.1fs.\n\n", len(f.Stacks), capitalize(f.Summary()), f.Duration.Seconds())
	b.WriteString("| Stack | Status | Detail |\n|---|---|---|\n")
	icon := map[string]string{"clean": "✅ clean", "drifted": "❌ drifted", "error": "⚠️ error"}
	for _, s := range f.Stacks {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Stack, icon[s.Status()], strings.ReplaceAll(fleetDetail(s), "|", "\\|"))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for _, s := range f.Stacks {
		if s.Status() != "drifted" {
			continue
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := s.Report.WriteMarkdown(w); err != nil {
			return err
		}
	}
	return nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
