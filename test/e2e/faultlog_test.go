//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// This file reads the engine's event log (PADDOCK_EVENT_LOG: one JSON line
// per engine event, with the time paddock received it), so a fault can be
// timed from what the engine is doing rather than from a wall clock, and a
// trial can say what the fault interrupted.

// stepEvent is one resource step event of the log.
type stepEvent struct {
	At    time.Time
	Phase string // "pre" (started), "done" or "failed"
	Op    string // create, delete, same, refresh, ...
	URN   string
	Type  string
}

// engineLog is what the log held at one moment.
type engineLog struct {
	Steps   []stepEvent
	Summary bool // the engine reported its summary: the operation ended
}

// readEngineLog parses the log as far as it is written; a line still being
// written is left for the next read.
func readEngineLog(file string) engineLog {
	var l engineLog
	f, err := os.Open(file)
	if err != nil {
		return l
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	type meta struct {
		Op   string `json:"op"`
		URN  string `json:"urn"`
		Type string `json:"type"`
	}
	type withMeta struct {
		Metadata meta `json:"metadata"`
	}
	for sc.Scan() {
		var line struct {
			T  time.Time `json:"t"`
			Ev struct {
				Pre     *withMeta `json:"resourcePreEvent"`
				Out     *withMeta `json:"resOutputsEvent"`
				Failed  *withMeta `json:"resOpFailedEvent"`
				Summary *struct{} `json:"summaryEvent"`
			} `json:"ev"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		add := func(phase string, m *withMeta) {
			if m != nil {
				l.Steps = append(l.Steps, stepEvent{At: line.T, Phase: phase, Op: m.Metadata.Op, URN: m.Metadata.URN, Type: m.Metadata.Type})
			}
		}
		add("pre", line.Ev.Pre)
		add("done", line.Ev.Out)
		add("failed", line.Ev.Failed)
		if line.Ev.Summary != nil {
			l.Summary = true
		}
	}
	return l
}

// isChange is a step that changes the cluster: a create or delete of a
// Kubernetes object (not a component, the provider or a read).
func isChange(s stepEvent) bool {
	if strings.HasPrefix(s.Type, "paddock:") || strings.HasPrefix(s.Type, "pulumi:") {
		return false
	}
	switch s.Op {
	case "create", "delete", "create-replacement", "delete-replaced", "update", "replace":
		return true
	}
	return false
}

// firstChange is the first change step the log shows started.
func (l engineLog) firstChange() (stepEvent, bool) {
	for _, s := range l.Steps {
		if s.Phase == "pre" && isChange(s) {
			return s, true
		}
	}
	return stepEvent{}, false
}

// progress counts the change steps done and lists those started and not
// finished: what a kill at this moment interrupts.
func (l engineLog) progress() (done int, inFlight []string) {
	open := map[string]stepEvent{}
	for _, s := range l.Steps {
		if !isChange(s) {
			continue
		}
		switch s.Phase {
		case "pre":
			open[s.URN] = s
		default:
			if _, ok := open[s.URN]; ok {
				delete(open, s.URN)
				done++
			}
		}
	}
	for _, s := range open {
		inFlight = append(inFlight, s.Op+" "+describeURN(s.Type, s.URN))
	}
	sort.Strings(inFlight)
	return done, inFlight
}

// describeURN is "Kind name" of a step.
func describeURN(typ, urn string) string {
	kind := typ
	if i := strings.LastIndex(typ, ":"); i >= 0 {
		kind = typ[i+1:]
	}
	name := urn
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		name = urn[i+2:]
	}
	return kind + " " + name
}

// waitForChange polls the log until the engine starts its first change
// step; it gives up when the run ends first (done receives) or after timeout.
func waitForChange(t *testing.T, file string, done <-chan error, timeout time.Duration) (stepEvent, error, bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if s, ok := readEngineLog(file).firstChange(); ok {
			return s, nil, true
		}
		select {
		case err := <-done:
			return stepEvent{}, err, false
		case <-deadline:
			t.Fatalf("the engine started no create or delete within %s (log %s)", timeout, file)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// trialRecord is one fault trial as the table reports it.
type trialRecord struct {
	N           int
	Spec        string
	Kill        string
	Trigger     string
	Interrupted string
	Left        leftBehind
	Recovered   []string
	Took        time.Duration // the recovering up
}

// leftBehind is what a killed update left, read right after the kill.
type leftBehind struct {
	Lock         string // "", "stale", "live holder"
	Pending      int
	Plugins      int
	NotInState   int // labelled objects the state does not hold and the spec declares
	Undeclared   int // labelled objects neither the state nor the spec holds
	NotInCluster int // state objects the cluster does not have
	StateErr     string
}

func (l leftBehind) String() string {
	var parts []string
	if l.Lock != "" {
		parts = append(parts, "lock ("+l.Lock+")")
	}
	if l.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending op(s)", l.Pending))
	}
	if l.Plugins > 0 {
		parts = append(parts, fmt.Sprintf("%d plugin(s)", l.Plugins))
	}
	if l.NotInState > 0 {
		parts = append(parts, fmt.Sprintf("%d object(s) not in state", l.NotInState))
	}
	if l.Undeclared > 0 {
		parts = append(parts, fmt.Sprintf("%d undeclared object(s) not in state", l.Undeclared))
	}
	if l.NotInCluster > 0 {
		parts = append(parts, fmt.Sprintf("%d state object(s) not in cluster", l.NotInCluster))
	}
	if l.StateErr != "" {
		parts = append(parts, "state unreadable: "+l.StateErr)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Recovery paths the kill trials must each exercise.
const (
	pathStaleLock = "stale lock removed"
	pathPending   = "pending operations cleared"
	pathDeadRun   = "dead run found in the journal"
	pathPlugins   = "orphaned plugins stopped"
	pathAdopted   = "objects not in state adopted"
	pathPruned    = "undeclared objects pruned"
)

// The paths each checkpoint mode must take: final checkpoints leave no
// pending operation (the state is saved at the end), every-step ones do.
var (
	finalRecoveryPaths     = []string{pathStaleLock, pathDeadRun, pathPlugins, pathAdopted, pathPruned}
	everyStepRecoveryPaths = []string{pathStaleLock, pathPending, pathPlugins, pathAdopted}
)

// recoveredBy reads, from the recovering up's output and what was left, the
// recovery paths it took.
func recoveredBy(out string, left leftBehind) []string {
	var paths []string
	if strings.Contains(out, "removed the lock of a dead update") {
		paths = append(paths, pathStaleLock)
	}
	if strings.Contains(out, "was interrupted; clearing") {
		paths = append(paths, pathPending)
	}
	if strings.Contains(out, "did not finish") {
		paths = append(paths, pathDeadRun)
	}
	if strings.Contains(out, "left running by a dead update") {
		paths = append(paths, pathPlugins)
	}
	if left.NotInState > 0 {
		paths = append(paths, pathAdopted)
	}
	if strings.Contains(out, "undeclared object(s) left by a dead run") {
		paths = append(paths, pathPruned)
	} else if left.Undeclared > 0 {
		// Pulumi deleted them itself: a CLI that ran on recorded them.
		paths = append(paths, "undeclared objects finished deleting")
	}
	if left.NotInCluster > 0 {
		paths = append(paths, "refresh dropped objects gone from the cluster")
	}
	if strings.Contains(out, "is locked by another update; waiting") {
		paths = append(paths, "waited for the orphaned CLI")
	}
	if strings.Contains(out, "still being deleted") {
		paths = append(paths, "waited for namespaces being deleted")
	}
	return paths
}

// faultTable renders the per-trial table for the test log.
func faultTable(records []trialRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| # | up to → recovered to | SIGKILL to | timed from | interrupted | left | recovered by | recovery took |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range records {
		rec := strings.Join(r.Recovered, ", ")
		if rec == "" {
			rec = "nothing to recover"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %.1fs |\n", r.N, r.Spec, r.Kill, r.Trigger, r.Interrupted, r.Left, rec, r.Took.Seconds())
	}
	return b.String()
}

// coverage counts the trials that took each recovery path.
func coverage(records []trialRecord) map[string]int {
	c := map[string]int{}
	for _, r := range records {
		for _, p := range r.Recovered {
			c[p]++
		}
	}
	return c
}
