package bench

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// Phases splits a paddock run by the engine events it logged
// (PADDOCK_EVENT_LOG): start (process start to the engine's first event:
// spec, policy, Pulumi CLI and workspace), refresh (reading every resource
// back from the cluster), update (the program's registrations, diffs and
// applies), finish (the last event to exit). Seconds each.
func Phases(eventLog string, start time.Time, wall time.Duration) map[string]float64 {
	f, err := os.Open(eventLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	var first, last, refreshStart, refreshEnd, updateStart time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			T  time.Time `json:"t"`
			Ev struct {
				Pre *struct {
					Metadata struct{ Op string } `json:"metadata"`
				} `json:"resourcePreEvent"`
				Out *struct {
					Metadata struct{ Op string } `json:"metadata"`
				} `json:"resOutputsEvent"`
			} `json:"ev"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if first.IsZero() {
			first = line.T
		}
		last = line.T
		op := ""
		if line.Ev.Pre != nil {
			op = line.Ev.Pre.Metadata.Op
		} else if line.Ev.Out != nil {
			op = line.Ev.Out.Metadata.Op
		}
		switch {
		case op == "refresh":
			if refreshStart.IsZero() {
				refreshStart = line.T
			}
			refreshEnd = line.T
		case op != "" && updateStart.IsZero():
			updateStart = line.T
		}
	}
	if first.IsZero() {
		return nil
	}
	out := map[string]float64{"start": first.Sub(start).Seconds()}
	updateFrom := first
	if !refreshStart.IsZero() {
		out["refresh"] = refreshEnd.Sub(first).Seconds()
		updateFrom = refreshEnd
	}
	out["update"] = last.Sub(updateFrom).Seconds()
	out["finish"] = start.Add(wall).Sub(last).Seconds()
	return out
}
