package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/paddock-platform/paddock/internal/termtext"
)

// progress turns engine events into lines a person can follow: each resource as it
// starts and finishes, and every few seconds what is still in flight (what the
// run is waiting on).
type progress struct {
	out     io.Writer
	verb    string // "up", "preview", "destroy"
	mu      sync.Mutex
	started map[string]time.Time
	label   map[string]string
	failed  []string
	done    chan struct{}
}

func newProgress(out io.Writer, verb string) *progress {
	return &progress{out: out, verb: verb, started: map[string]time.Time{}, label: map[string]string{}, done: make(chan struct{})}
}

// describe renders a step as "Kind name" from its type token and URN.
func describe(typ, urn string) string {
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

func isComponent(typ string) bool {
	return strings.HasPrefix(typ, "paddock:") || strings.HasPrefix(typ, "pulumi:")
}

// consume reads events until the channel closes.
func (p *progress) consume(ch <-chan events.EngineEvent) {
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	defer close(p.done)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			p.handle(ev)
		case <-ticker.C:
			p.waiting()
		}
	}
}

func (p *progress) handle(ev events.EngineEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trace(ev)
	switch {
	case ev.ResourcePreEvent != nil:
		m := ev.ResourcePreEvent.Metadata
		if isComponent(m.Type) || m.Op == apitype.OpSame || m.Op == apitype.OpRead || m.Op == apitype.OpRefresh {
			return
		}
		p.started[m.URN] = time.Now()
		p.label[m.URN] = fmt.Sprintf("%-8s %s", m.Op, describe(m.Type, m.URN))
		if p.verb != "preview" {
			fmt.Fprintf(p.out, "  … %s\n", p.label[m.URN])
		} else {
			line := fmt.Sprintf("  %s %s", opSymbol(m.Op), p.label[m.URN])
			if len(m.Diffs) > 0 {
				line += " (" + strings.Join(m.Diffs, ", ") + ")"
			}
			fmt.Fprintln(p.out, line)
		}
	case ev.ResOutputsEvent != nil:
		m := ev.ResOutputsEvent.Metadata
		if t, ok := p.started[m.URN]; ok {
			if p.verb != "preview" {
				fmt.Fprintf(p.out, "  ✓ %s (%.1fs)\n", p.label[m.URN], time.Since(t).Seconds())
			}
			delete(p.started, m.URN)
		}
	case ev.ResOpFailedEvent != nil:
		m := ev.ResOpFailedEvent.Metadata
		fmt.Fprintf(p.out, "  ✗ %s failed\n", describe(m.Type, m.URN))
		p.failed = append(p.failed, describe(m.Type, m.URN))
		delete(p.started, m.URN)
	case ev.DiagnosticEvent != nil:
		d := ev.DiagnosticEvent
		if d.Severity == "error" || d.Severity == "warning" {
			msg := strings.TrimSpace(d.Message)
			if msg == "" {
				return
			}
			where := ""
			if d.URN != "" {
				where = describe(urnType(d.URN), d.URN) + ": "
			}
			if strings.Contains(msg, "unreachable cluster") || apiServerGone(msg) {
				// Not the provider's advice to drop the resource from state:
				// the cluster is down, not gone (opError says what to do).
				msg = "the API server did not answer"
			}
			fmt.Fprintf(p.out, "  %s: %s%s\n", d.Severity, where, msg)
		}
	}
}

// urnType extracts the resource type from a URN.
func urnType(urn string) string {
	parts := strings.Split(urn, "::")
	if len(parts) < 4 {
		return ""
	}
	t := parts[2]
	if i := strings.LastIndex(t, "$"); i >= 0 {
		t = t[i+1:]
	}
	return t
}

func (p *progress) waiting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.started) == 0 || p.verb == "preview" {
		return
	}
	var names []string
	for urn, t := range p.started {
		names = append(names, fmt.Sprintf("%s (%ds)", describe(urnType(urn), urn), int(time.Since(t).Seconds())))
	}
	sort.Strings(names)
	// The first few name what holds the run up; a list of dozens would
	// bury the progress in one line hundreds of columns wide.
	const shown = 3
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	fmt.Fprint(p.out, termtext.Wrap(fmt.Sprintf("waiting on %d: %s", len(names), list), "  ", "    "))
}

func (p *progress) wait() { <-p.done }

func opSymbol(op apitype.OpType) string {
	switch op {
	case apitype.OpCreate:
		return "+"
	case apitype.OpDelete:
		return "-"
	case apitype.OpUpdate:
		return "~"
	case apitype.OpReplace, apitype.OpCreateReplacement, apitype.OpDeleteReplaced:
		return "+-"
	default:
		return " "
	}
}

// eventLogEnv names a file every engine event is appended to, one JSON line
// each with the time it arrived: where an operation's time goes, for
// profiling (`make bench` uses it).
const eventLogEnv = "PADDOCK_EVENT_LOG"

var eventLog struct {
	once sync.Once
	f    *os.File
}

func (p *progress) trace(ev events.EngineEvent) {
	path := os.Getenv(eventLogEnv)
	if path == "" {
		return
	}
	eventLog.once.Do(func() {
		eventLog.f, _ = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	})
	if eventLog.f == nil {
		return
	}
	b, err := json.Marshal(struct {
		T  string             `json:"t"`
		Ev events.EngineEvent `json:"ev"`
	}{time.Now().UTC().Format(time.RFC3339Nano), ev})
	if err == nil {
		eventLog.f.Write(append(b, '\n'))
	}
}
