package policy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mitchellh/go-wordwrap"

	"github.com/paddock-platform/paddock/internal/snippet"
	"github.com/paddock-platform/paddock/internal/termtext"
)

// TextOptions tune WriteText.
type TextOptions struct {
	// Source returns a spec file's bytes, for snippets; nil reads from disk.
	Source func(filename string) ([]byte, bool)
	// Verbose adds the control each finding protects and its checklist items.
	Verbose bool
	// NoSnippets leaves out source lines (for logs).
	NoSnippets bool
	// Brief writes a report without errors as its one-line BriefSummary, for
	// commands that decide nothing from it; errors are always written in full.
	Brief bool
	// Details is the command that shows the full report, named by the line
	// Brief writes (e.g. "paddock validate examples/local").
	Details string
}

const textWidth = 78

// WriteText renders the report for a terminal, in the style of the spec's
// diagnostics: every unwaived finding with its source line, then the waived
// findings, every waiver and a summary line.
func (r *Report) WriteText(w io.Writer, opts TextOptions) error {
	if opts.Brief && !r.Blocking() {
		_, err := fmt.Fprintln(w, r.BriefSummary(opts.Details))
		return err
	}
	bw := bufio.NewWriter(w)
	src := newSourceCache(opts.Source)
	for _, f := range r.Findings {
		label := map[Severity]string{Error: "Error", Warning: "Warning", Note: "Note"}[f.Severity]
		fmt.Fprintf(bw, "%s: %s [%s]\n\n", label, f.Title, f.RuleID)
		writeWhere(bw, f, src, opts)
		fmt.Fprintf(bw, "%s\n\n", wordwrap.WrapString(f.Message, textWidth))
		fmt.Fprintf(bw, "%s\n", wordwrap.WrapString("Fix: "+f.Fix, textWidth))
		if opts.Verbose {
			if rule := f.Rule(); rule != nil {
				fmt.Fprintf(bw, "%s\n", wordwrap.WrapString("Protects: "+rule.Control+checklistSuffix(rule), textWidth))
			}
		}
		fmt.Fprintln(bw)
	}
	for _, f := range r.Waived {
		fmt.Fprintf(bw, "Waived: %s [%s]\n", f.Title, f.RuleID)
		fmt.Fprint(bw, termtext.Wrap(fmt.Sprintf("on %s, %s", f.Src, f.Object), "  ", "    "))
		fmt.Fprintf(bw, "%s\n\n", indent(wordwrap.WrapString(fmt.Sprintf("waived by the waiver at %s%s: %s", f.Waiver.Src, expiry(f.Waiver.Expires), f.Waiver.Reason), textWidth-2), "  "))
	}
	if len(r.Waivers) > 0 {
		fmt.Fprintf(bw, "Waivers (%d):\n", len(r.Waivers))
		for _, ws := range r.Waivers {
			scope := ws.Scope
			if scope == "" {
				scope = "whole platform"
			}
			state := string(ws.State)
			if ws.State == WaiverActive {
				state = fmt.Sprintf("silences %d finding%s", ws.Silenced, plural(ws.Silenced))
			}
			fmt.Fprint(bw, termtext.Wrap(fmt.Sprintf("%-8s %s; %s%s (%s)", ws.Rule, scope, state, expiry(ws.Expires), ws.Src), "  ", "           "))
			fmt.Fprintf(bw, "%s\n", indent(wordwrap.WrapString("reason: "+ws.Reason, textWidth-11), "           "))
		}
		fmt.Fprintln(bw)
	}
	if len(r.Trusted) > 0 {
		fmt.Fprintf(bw, "Trusted mutating admission (%d):\n", len(r.Trusted))
		for _, t := range r.Trusted {
			fmt.Fprintf(bw, "  %s (%s)\n", t.Ref(), t.Src)
			fmt.Fprintf(bw, "%s\n", indent(wordwrap.WrapString("reason: "+t.Reason, textWidth-11), "           "))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprint(bw, termtext.Wrap(r.Summary(), "", "  "))
	return bw.Flush()
}

// BriefSummary is the one line of a report written Brief: the errors, the
// other findings and the waivers that exist, and where to read them (details,
// a command) when there is anything to read.
func (r *Report) BriefSummary(details string) string {
	e, wn, n := r.Count(Error), r.Count(Warning), r.Count(Note)
	parts := []string{fmt.Sprintf("%d error%s", e, plural(e))}
	if wn > 0 {
		parts = append(parts, fmt.Sprintf("%d warning%s", wn, plural(wn)))
	}
	if n > 0 {
		parts = append(parts, fmt.Sprintf("%d note%s", n, plural(n)))
	}
	if len(r.Waivers) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiver%s", len(r.Waivers), plural(len(r.Waivers))))
	}
	if len(r.Trusted) > 0 {
		parts = append(parts, fmt.Sprintf("%d trusted admission object%s", len(r.Trusted), plural(len(r.Trusted))))
	}
	if len(parts) == 1 && e == 0 {
		return "policy: 0 errors, no warnings, notes or waivers."
	}
	s := "policy: " + strings.Join(parts, ", ")
	if details == "" {
		return s + "."
	}
	return s + " — `" + details + "` for details"
}

// Summary is one line: counts, waivers and whether `up` is blocked.
func (r *Report) Summary() string {
	e, wn, n := r.Count(Error), r.Count(Warning), r.Count(Note)
	s := fmt.Sprintf("policy: %d error%s, %d warning%s, %d note%s", e, plural(e), wn, plural(wn), n, plural(n))
	if len(r.Waivers) > 0 || len(r.Waived) > 0 {
		s += fmt.Sprintf("; %d finding%s waived by %d waiver%s", len(r.Waived), plural(len(r.Waived)), len(r.Waivers), plural(len(r.Waivers)))
	}
	if !r.Blocking() {
		return s + "."
	}
	// Say which of the errors no waiver silences, so nobody writes one.
	var gcp bool
	var unwaivable []string
	for _, f := range r.Findings {
		rule := f.Rule()
		switch {
		case f.Severity != Error || rule == nil:
		case rule.Kind == Validity:
			gcp = true
		case rule.Unwaivable && !slices.Contains(unwaivable, rule.ID):
			unwaivable = append(unwaivable, rule.ID)
		}
	}
	var why []string
	if gcp {
		why = append(why, "GCP-xxx errors cannot be waived: GKE would refuse the spec")
	}
	if len(unwaivable) > 0 {
		sort.Strings(unwaivable)
		why = append(why, strings.Join(unwaivable, ", ")+" errors cannot be waived either")
	}
	if len(why) == 1 {
		why[0] = strings.TrimSuffix(why[0], " either")
	}
	s += ". Errors block `paddock up`: fix them, or waive them with a reason"
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s + "."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func expiry(date string) string {
	if date == "" {
		return ""
	}
	return ", expires " + date
}

func checklistSuffix(r *Rule) string {
	if len(r.Checklist) == 0 {
		return ""
	}
	return " (checklist " + strings.Join(r.Checklist, ", ") + ")"
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// writeWhere prints "on file:line:col, object:" and the source line.
func writeWhere(w io.Writer, f Finding, src *sourceCache, opts TextOptions) {
	if !f.Src.Known() {
		fmt.Fprintf(w, "  on %s:\n\n", f.Object)
		return
	}
	fmt.Fprint(w, termtext.Wrap(fmt.Sprintf("on %s, %s:", f.Src, f.Object), "  ", "    "))
	if !opts.NoSnippets {
		if line, ok := src.line(f.Src.Filename, f.Src.Line); ok {
			writeLine(w, line, f.Src.Line, f.Src.Column)
		}
	}
	fmt.Fprintln(w)
}

// writeLine prints a numbered source line and underlines it from column to
// the end of its content (without a trailing block opener).
func writeLine(w io.Writer, line string, n, col int) {
	start := 0 // byte offset of column col (columns count characters)
	for i := 1; i < col && start < len(line); i++ {
		_, size := utf8.DecodeRuneInString(line[start:])
		start += size
	}
	code := line[:codeEnd(line)]
	end := len(strings.TrimRight(code, " \t{"))
	if end <= start {
		end = len(strings.TrimRight(code, " \t"))
	}
	// A line can be megabytes long: print a window around the finding.
	line, start, end = snippet.Clip(line, start, end)
	fmt.Fprintf(w, "  %d: %s\n", n, line)
	var pad strings.Builder
	for _, r := range line[:start] {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	carets := utf8.RuneCountInString(line[start:max(start, end)])
	fmt.Fprintf(w, "  %s  %s%s\n", strings.Repeat(" ", len(fmt.Sprint(n))), pad.String(), strings.Repeat("^", max(1, carets)))
}

// codeEnd is where a trailing comment (# or //) starts in an HCL line, or its
// length. Strings are skipped, so "a#b" is not a comment.
func codeEnd(line string) int {
	inString := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == '#' || c == '/' && i+1 < len(line) && line[i+1] == '/'):
			return i
		}
	}
	return len(line)
}

// sourceCache reads each file once.
type sourceCache struct {
	read  func(string) ([]byte, bool)
	lines map[string][]string
}

func newSourceCache(read func(string) ([]byte, bool)) *sourceCache {
	if read == nil {
		read = func(name string) ([]byte, bool) {
			b, err := os.ReadFile(name)
			return b, err == nil
		}
	}
	return &sourceCache{read: read, lines: map[string][]string{}}
}

func (s *sourceCache) line(file string, n int) (string, bool) {
	lines, ok := s.lines[file]
	if !ok {
		if b, found := s.read(file); found {
			b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
			lines = strings.Split(string(b), "\n")
		}
		s.lines[file] = lines
	}
	if n < 1 || n > len(lines) {
		return "", false
	}
	return lines[n-1], true
}

// WriteRules writes the rule table: ID, severity, kind, checklist items and
// title; verbose adds each rule's control and fix.
func WriteRules(w io.Writer, verbose bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%-8s %-8s %-8s %-12s %s\n", "RULE", "SEVERITY", "KIND", "CHECKLIST", "TITLE")
	for _, r := range Rules() {
		fmt.Fprintf(bw, "%-8s %-8s %-8s %-12s %s\n", r.ID, r.Severity, r.Kind, strings.Join(r.Checklist, ","), r.Title)
		if verbose {
			fmt.Fprintf(bw, "%s\n", indent(wordwrap.WrapString("Protects: "+r.Control, textWidth-9), "         "))
			fmt.Fprintf(bw, "%s\n", indent(wordwrap.WrapString("Fix: "+r.Fix, textWidth-9), "         "))
		}
	}
	fmt.Fprintln(bw, "\nKinds: static rules are checked from the spec by `paddock validate` and before `paddock up`;")
	fmt.Fprintln(bw, "live rules are verified on the running cluster by `paddock verify`; process rules are")
	fmt.Fprintln(bw, "organisational controls no tool can check, listed so every checklist item is covered;")
	fmt.Fprintln(bw, "validity rules (GCP-xxx) are the GCP layer's: checked from a target \"gke\" spec like static")
	fmt.Fprintln(bw, "rules, errors that no waiver silences (GKE would refuse the spec, or it would not do what it says).")
	var meta, unwaivable []string
	for _, r := range Rules() {
		switch {
		case r.Kind == Static && r.Meta:
			meta = append(meta, r.ID)
		case r.Unwaivable:
			unwaivable = append(unwaivable, r.ID)
		}
	}
	if len(unwaivable) > 0 && len(meta) > 0 {
		fmt.Fprintln(bw, wordwrap.WrapString(fmt.Sprintf("Static rules no waiver silences either: %s, and the meta rules (%s to %s: the spec and its waivers).",
			strings.Join(unwaivable, ", "), meta[0], meta[len(meta)-1]), 96))
	}
	return bw.Flush()
}
