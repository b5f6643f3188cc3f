package bench

import (
	"fmt"
	"sort"
)

// Baseline is what a run's results replaced: the "before" of the report's
// before/after table, carried from run to run so that a rerun, or the
// partial results an interrupted run saves, never becomes its own "before".
type Baseline struct {
	// Paddock and Date name the run the samples come from.
	Paddock   *Build   `json:"paddock"`
	Date      string   `json:"date"`
	Provision []Sample `json:"provision"`
	// Quoted are figures of sizes the baseline did not measure, taken from
	// elsewhere; each names its Source.
	Quoted []QuotedFigure `json:"quoted,omitempty"`
}

// QuotedFigure is a measurement the harness did not make itself.
type QuotedFigure struct {
	Tool    string  `json:"tool"`
	Op      string  `json:"op"`
	Tenants int     `json:"tenants"`
	Seconds float64 `json:"seconds"`
	Source  string  `json:"source"`
}

// Issue14Quoted are the 100-tenant figures issue 14 quotes from the
// 2026-11-29 run (--checkpoints final), which the results format 3 it
// replaced did not keep (they measured 1 and 10 tenants).
var Issue14Quoted = []QuotedFigure{
	{Tool: ToolPaddockFinal, Op: OpNoop, Tenants: 100, Seconds: 115.9, Source: issue14Source},
	{Tool: ToolPaddockFinal, Op: OpDrift, Tenants: 100, Seconds: 118.1, Source: issue14Source},
	{Tool: ToolPaddockFinal, Op: OpDestroy, Tenants: 100, Seconds: 317.6, Source: issue14Source},
}

const issue14Source = "quoted from issue 14 (its 2026-11-29 run), not measured by this harness"

// BaselineOf is the "before" of results that replace old: the baseline old
// carries if it has one, else old's own measurements. Results of a binary
// from before the new default predate issue 14's work, so the figures the
// issue quotes for the sizes they lack join them. It is nil when old does not name the binary
// it measured: figures of an unknown binary are no "before".
func BaselineOf(old *Results) *Baseline {
	if old == nil {
		return nil
	}
	if old.Baseline != nil {
		return old.Baseline
	}
	return OwnBaseline(old)
}

// OwnBaseline is old's own measurements as a baseline, whatever baseline
// old carries (-baseline).
func OwnBaseline(old *Results) *Baseline {
	if old == nil || old.Identified() != nil || len(old.Provision) == 0 {
		return nil
	}
	b := &Baseline{Paddock: old.Paddock, Date: old.Date, Provision: old.Provision}
	if predatesDefault(old.Provision) {
		for _, q := range Issue14Quoted {
			if _, ok := b.find(q.Tool, q.Op, q.Tenants); !ok {
				b.Quoted = append(b.Quoted, q)
			}
		}
	}
	return b
}

// predatesDefault says the samples measured a binary from before the
// crash-safe default that saves the state once (no "paddock" sample once
// upgraded): the binary issue 14 was measured on.
func predatesDefault(samples []Sample) bool {
	for _, s := range samples {
		if s.Tool == ToolPaddock {
			return false
		}
	}
	return true
}

// find is the baseline's figure of tool/op at n tenants, measured or
// quoted, with where it comes from.
func (b *Baseline) find(tool, op string, n int) (seconds float64, ok bool) {
	for _, s := range b.Provision {
		if s.Tool == tool && s.Op == op && s.Tenants == n {
			return s.Seconds, true
		}
	}
	return 0, false
}

// BeforeAfterRow is one line of the before/after table.
type BeforeAfterRow struct {
	Label   string
	Tenants int
	Before  float64
	// Source says which mode "before" is and where it comes from.
	Source string
	// After is 0 when this run did not measure it.
	After float64
}

// beforeAfter are the comparisons the table makes: each "before" tool in
// order of preference against the "after" tool. A binary before format 4
// was measured as paddock-final (not crash-safe) and paddock-every-step
// (its crash-safe default); a later one as paddock (its crash-safe
// default) and paddock-every-step.
var beforeAfter = []struct {
	label  string
	op     string
	before []string
	after  string
}{
	{"create, crash-safe default", OpCreate, []string{ToolPaddock, ToolPaddockEveryStep}, ToolPaddock},
	{"create (before: --checkpoints final, not crash-safe)", OpCreate, []string{ToolPaddockFinal}, ToolPaddock},
	{"no-op up", OpNoop, []string{ToolPaddockFinal, ToolPaddock}, ToolPaddock},
	{"drift", OpDrift, []string{ToolPaddockFinal, ToolPaddock}, ToolPaddock},
	{"destroy", OpDestroy, []string{ToolPaddockFinal, ToolPaddock}, ToolPaddock},
	{"destroy, every-step checkpoints", OpDestroy, []string{ToolPaddockEveryStep}, ToolPaddockEveryStep},
}

// BeforeAfter compares the results with their baseline: a row for every
// comparison and size the baseline has a figure of.
func (r *Results) BeforeAfter() []BeforeAfterRow {
	b := r.Baseline
	if b == nil {
		return nil
	}
	var rows []BeforeAfterRow
	for _, c := range beforeAfter {
		sizes := map[int]bool{}
		for _, s := range b.Provision {
			sizes[s.Tenants] = true
		}
		for _, q := range b.Quoted {
			sizes[q.Tenants] = true
		}
		var ns []int
		for n := range sizes {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		for _, n := range ns {
			row, ok := b.row(c.before, c.op, n)
			if !ok {
				continue
			}
			row.Label, row.Tenants = c.label, n
			if s, ok := r.Find(c.after, c.op, n); ok {
				row.After = s.Seconds
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// row is the first of tools the baseline has a figure of for op at n
// tenants, measured before quoted.
func (b *Baseline) row(tools []string, op string, n int) (BeforeAfterRow, bool) {
	for _, tool := range tools {
		if sec, ok := b.find(tool, op, n); ok {
			return BeforeAfterRow{Before: sec, Source: fmt.Sprintf("%s, Paddock %s", modeOf(tool), b.Paddock.Commit)}, true
		}
	}
	for _, tool := range tools {
		for _, q := range b.Quoted {
			if q.Tool == tool && q.Op == op && q.Tenants == n {
				return BeforeAfterRow{Before: q.Seconds, Source: fmt.Sprintf("%s, %s", modeOf(tool), q.Source)}, true
			}
		}
	}
	return BeforeAfterRow{}, false
}

// modeOf says how a tool saved its state.
func modeOf(tool string) string {
	switch tool {
	case ToolPaddockEveryStep:
		return "every-step checkpoints"
	case ToolPaddockFinal:
		return "--checkpoints final"
	}
	return "the default"
}
