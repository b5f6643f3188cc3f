package schemas

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/snippet"
)

// SpecFileExt is the extension of spec files in a directory;
// SpecJSONFileExt that of specs in HCL's JSON syntax (for generators; `paddock
// schema` prints their JSON Schema).
const (
	SpecFileExt     = ".hcl"
	SpecJSONFileExt = ".hcl.json"
)

// VarsFileExt is the extension of vars files: `name = value` lines in HCL
// syntax that set variables. They are never spec files. Those ending in
// AutoVarsFileExt in a spec directory are loaded automatically (in name
// order); others only when given as LoadOptions.VarFiles (--var-file).
const (
	VarsFileExt     = ".pvars.hcl"
	AutoVarsFileExt = ".auto.pvars.hcl"
)

// LoadOptions tune a load.
type LoadOptions struct {
	// Vars are raw -var name=value assignments, the highest precedence. A
	// string variable takes the text as is; any other type parses it as an
	// HCL expression ("[1, 2]", "{ a = 1 }", "true").
	Vars map[string]string
	// VarFiles are vars files (--var-file), in rising precedence, above the
	// *.auto.pvars.hcl files of the spec directory and the environment.
	VarFiles []string
	// Environ is the environment to read PADDOCK_VAR_<name> from, as
	// os.Environ() gives it; nil means os.Environ().
	Environ []string
}

// Loader loads specs and keeps every file it parsed, so diagnostics can be
// rendered with source snippets afterwards (WriteDiagnostics). Use one Loader
// per load; NewLoader makes one. A Loader is not safe for concurrent use.
//
// The package-level LoadDir, LoadFiles and LoadSource are shorthands for a
// fresh Loader, for callers that only need the model.
type Loader struct {
	parser *hclparse.Parser
	// refused are files refused before parsing (too deeply nested), kept
	// for the snippets of their diagnostics.
	refused map[string]*hcl.File
	// budget and tokens are what is left of MaxSpecSize and MaxSpecTokens
	// in this load.
	budget, tokens int
}

// NewLoader returns an empty Loader.
func NewLoader() *Loader {
	return &Loader{parser: hclparse.NewParser(), refused: map[string]*hcl.File{}, budget: MaxSpecSize, tokens: MaxSpecTokens}
}

// LoadDir parses every *.hcl file in dir (sorted by name, merged as one spec)
// and returns the model. Hidden files and editor leftovers (".x.hcl",
// "#x.hcl#", "x.hcl~") are skipped. If dir is a regular file, that one file is
// the spec.
func LoadDir(dir string, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	return NewLoader().LoadDir(dir, opts)
}

// LoadFiles is LoadDir for explicit paths: each is a spec file (whatever its
// extension) or a directory, which contributes its *.hcl files.
func LoadFiles(paths []string, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	return NewLoader().LoadFiles(paths, opts)
}

// LoadSource loads a spec held in memory, as if read from filename. It is the
// entry point for tests (here and in later packages) and tools that generate
// specs.
func LoadSource(filename string, src []byte, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	return NewLoader().LoadSource(filename, src, opts)
}

// LoadDir is the package-level LoadDir, keeping the parsed files.
func (l *Loader) LoadDir(dir string, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	return l.LoadFiles([]string{dir}, opts)
}

// LoadFiles is the package-level LoadFiles, keeping the parsed files.
func (l *Loader) LoadFiles(paths []string, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	names, autoVars, diags := specFiles(paths)
	if diags.HasErrors() {
		return nil, diags
	}
	var files []*hcl.File
	for _, name := range names {
		src, d := readSpecFile(name, &l.budget)
		if d != nil {
			diags = append(diags, d)
			continue
		}
		f, fdiags := l.parse(name, src, strings.HasSuffix(name, SpecJSONFileExt))
		diags = append(diags, fdiags...)
		if f != nil {
			files = append(files, f)
		}
	}
	opts.VarFiles = append(autoVars, opts.VarFiles...)
	return l.load(files, diags, opts)
}

// parse parses one file after checking it is within the input bounds
// (limits.go); a file that is not is refused with a diagnostic and never
// reaches the parser.
func (l *Loader) parse(name string, src []byte, json bool) (*hcl.File, hcl.Diagnostics) {
	if len(src) > MaxSpecFileSize {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Spec file too large",
			Detail:   fmt.Sprintf("%s is larger than %d MiB, the most Paddock reads from one spec or vars file. Split it into several files of the spec directory, or use for_each.", name, MaxSpecFileSize>>20),
			Subject:  &hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	var d *hcl.Diagnostic
	var tokens int
	if json {
		tokens, d = checkJSONNesting(src, name)
	} else {
		tokens, d = checkTokens(src, name, hcl.InitialPos, modeConfig)
	}
	if d == nil && tokens > l.tokens {
		d = &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Spec too large",
			Detail: fmt.Sprintf("The spec's files hold more than %d tokens (names, values, operators) together, the most Paddock reads in one load; a spec of a thousand tenants written out holds about 165,000. Use for_each, or split the platform.",
				MaxSpecTokens),
			Subject: &hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos},
		}
	}
	l.tokens -= tokens
	if d != nil {
		// Keep the source for the diagnostic's snippet, without a body.
		l.refused[name] = &hcl.File{Bytes: src}
		return nil, hcl.Diagnostics{d}
	}
	if json {
		return l.parser.ParseJSON(src, name)
	}
	return l.parser.ParseHCL(src, name)
}

// LoadSource is the package-level LoadSource, keeping the parsed file. A
// filename ending in .json selects HCL's JSON syntax.
func (l *Loader) LoadSource(filename string, src []byte, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	f, diags := l.parse(filename, src, strings.HasSuffix(filename, ".json"))
	var files []*hcl.File
	if f != nil {
		files = append(files, f)
	}
	return l.load(files, diags, opts)
}

// Files returns every file the loader parsed (or refused to parse), by
// filename, for WriteDiagnostics.
func (l *Loader) Files() map[string]*hcl.File {
	files := l.parser.Files()
	if len(l.refused) == 0 {
		return files
	}
	out := make(map[string]*hcl.File, len(files)+len(l.refused))
	for name, f := range l.refused {
		out[name] = f
	}
	for name, f := range files {
		out[name] = f
	}
	return out
}

// WriteDiagnostics renders diags with snippets from the files this loader
// parsed. See the package-level WriteDiagnostics.
func (l *Loader) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics) {
	WriteDiagnostics(w, l.Files(), diags)
}

// load runs decode, evaluation and build over parsed files. Syntax errors
// stop the load before decoding: a half-parsed file would only add noise.
func (l *Loader) load(files []*hcl.File, diags hcl.Diagnostics, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	if diags.HasErrors() || len(files) == 0 {
		return nil, sortDiagnostics(diags)
	}
	for _, f := range files {
		diags = append(diags, checkNumbers(f)...)
	}
	if diags.HasErrors() {
		return nil, sortDiagnostics(diags)
	}
	in, idiags := l.inputs(opts)
	diags = append(diags, idiags...)
	if idiags.HasErrors() {
		// A vars file that does not parse: its values are unknown, and every
		// variable it sets would report a confusing follow-up error.
		return nil, sortDiagnostics(diags)
	}
	cfg, ddiags := decode(files)
	diags = append(diags, ddiags...)
	b := newBuilder(newEvalContext())
	b.variables(cfg.Variables, in)
	b.locals(cfg.Locals, cfg.LocalOrder)
	p := b.build(cfg)
	diags = append(diags, b.diags...)
	diags = sortDiagnostics(dedupeDiagnostics(clipDiagnostics(redactDiagnostics(diags, p.SensitiveValues()))))
	if diags.HasErrors() {
		return nil, diags
	}
	return p, diags
}

// inputs gathers the values given for variables from outside the spec, in
// rising precedence: PADDOCK_VAR_*, vars files in order, -var.
func (l *Loader) inputs(opts LoadOptions) (inputs, hcl.Diagnostics) {
	var in inputs
	var diags hcl.Diagnostics
	env := opts.Environ
	if env == nil {
		env = os.Environ()
	}
	var envNames []string
	envVals := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvVarPrefix) || len(k) == len(EnvVarPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvVarPrefix)
		if _, dup := envVals[name]; !dup {
			envNames = append(envNames, name)
		}
		envVals[name] = v
	}
	sort.Strings(envNames)
	for _, name := range envNames {
		in.add(name, varSource{origin: EnvVarPrefix + name, raw: envVals[name]})
	}
	for _, name := range opts.VarFiles {
		var f *hcl.File
		var fdiags hcl.Diagnostics
		if src, d := readSpecFile(name, &l.budget); d != nil {
			fdiags = hcl.Diagnostics{d}
		} else {
			f, fdiags = l.parse(name, src, false)
		}
		diags = append(diags, fdiags...)
		if f == nil || fdiags.HasErrors() {
			if f == nil && !fdiags.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read vars file", Detail: fmt.Sprintf("The vars file %q could not be read.", name)})
			}
			continue
		}
		if ndiags := checkNumbers(f); ndiags.HasErrors() {
			diags = append(diags, ndiags...)
			continue
		}
		attrs, adiags := f.Body.JustAttributes()
		diags = append(diags, adiags...)
		names := make([]string, 0, len(attrs))
		for n := range attrs {
			names = append(names, n)
		}
		sortByStart(names, attrs)
		for _, n := range names {
			a := attrs[n]
			rng := a.Expr.Range()
			in.add(n, varSource{origin: fmt.Sprintf("%s:%d", name, a.Range.Start.Line), expr: a.Expr, rng: &rng})
		}
	}
	names := make([]string, 0, len(opts.Vars))
	for name := range opts.Vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		in.add(name, varSource{origin: "-var " + name, raw: opts.Vars[name]})
	}
	return in, diags
}

// redactDiagnostics replaces every sensitive value in the text of diags.
func redactDiagnostics(diags hcl.Diagnostics, values []string) hcl.Diagnostics {
	if len(values) == 0 {
		return diags
	}
	for _, d := range diags {
		d.Summary = model.RedactValues(d.Summary, values)
		d.Detail = model.RedactValues(d.Detail, values)
		d.Expression, d.EvalContext = nil, nil
	}
	return diags
}

// clipDiagnostics cuts every long run of non-space characters in the text of
// diags (a value quoted in a message can be a megabyte long) to
// snippet.Width, so that every output (text, JSON, SARIF) stays readable.
func clipDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		d.Summary = clipRuns(d.Summary)
		d.Detail = clipRuns(d.Detail)
	}
	return diags
}

func clipRuns(s string) string {
	if len(s) <= snippet.Width {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexAny(s, " \n\t")
		if i < 0 {
			i = len(s)
		}
		word := s[:i]
		if len(word) > snippet.Width {
			cut := snippet.Width / 2
			for cut > 0 && !utf8.RuneStart(word[cut]) {
				cut--
			}
			fmt.Fprintf(&b, "%s… (%d characters)", word[:cut], len(word))
		} else {
			b.WriteString(word)
		}
		if i < len(s) {
			b.WriteByte(s[i])
			i++
		}
		s = s[i:]
	}
	return b.String()
}

// dedupeDiagnostics drops exact repeats (a for_each tenant reports an error
// of its body once per element).
func dedupeDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	type key struct {
		sev             hcl.DiagnosticSeverity
		summary, detail string
		subject         hcl.Range
	}
	seen := map[key]bool{}
	out := diags[:0]
	for _, d := range diags {
		k := key{sev: d.Severity, summary: d.Summary, detail: d.Detail}
		if d.Subject != nil {
			k.subject = *d.Subject
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// specFiles expands paths into the ordered list of files to parse, and the
// *.auto.pvars.hcl files of the directories among them.
func specFiles(paths []string) ([]string, []string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out, autoVars []string
	seen := map[string]bool{}
	add := func(name string) {
		if clean := filepath.Clean(name); !seen[clean] {
			seen[clean] = true
			out = append(out, name)
		}
	}
	if len(paths) == 0 {
		return nil, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No spec given",
			Detail:   "Give the directory that holds the platform's *.hcl files, or the spec files themselves.",
		}}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Spec not found",
				Detail:   fmt.Sprintf("There is no file or directory %q. Give the directory that holds the platform's *.hcl files (for example examples/local), or a spec file.", p),
			})
			continue
		case err != nil:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read spec",
				Detail:   fmt.Sprintf("%s. Check that the path exists and is readable.", err),
			})
			continue
		case !info.IsDir():
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read spec directory",
				Detail:   fmt.Sprintf("%s. Check that the directory is readable.", err),
			})
			continue
		}
		var found int
		for _, e := range entries { // os.ReadDir sorts by name
			if e.IsDir() {
				continue
			}
			if isAutoVarsFile(e.Name()) {
				autoVars = append(autoVars, filepath.Join(p, e.Name()))
				continue
			}
			if !isSpecFile(e.Name()) {
				continue
			}
			add(filepath.Join(p, e.Name()))
			found++
		}
		if found == 0 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "No spec files",
				Detail: fmt.Sprintf("The directory %q contains no %s files. Write the platform spec in one or more %s files there (examples/local/platform.hcl is a starting point), or give the directory that holds them.",
					p, "*"+SpecFileExt, "*"+SpecFileExt),
			})
		}
	}
	return out, autoVars, diags
}

// isSpecFile selects *.hcl and *.hcl.json, skipping vars files, hidden files
// and editor leftovers.
func isSpecFile(name string) bool {
	return (strings.HasSuffix(name, SpecFileExt) || strings.HasSuffix(name, SpecJSONFileExt)) && !strings.HasSuffix(name, VarsFileExt) &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "#") &&
		!strings.HasSuffix(name, "~")
}

// isAutoVarsFile selects the vars files loaded without being asked.
func isAutoVarsFile(name string) bool {
	return strings.HasSuffix(name, AutoVarsFileExt) && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "#")
}
