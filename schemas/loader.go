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

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/paddock-platform/paddock/model"
)

// SpecFileExt is the extension of spec files in a directory.
const SpecFileExt = ".hcl"

// LoadOptions tune a load.
type LoadOptions struct {
	// Vars are raw -var name=value assignments. The language has no variable
	// blocks yet, so any entry is reported as an undeclared variable.
	Vars map[string]string
}

// Loader loads specs and keeps every file it parsed, so diagnostics can be
// rendered with source snippets afterwards (WriteDiagnostics). Use one Loader
// per load; NewLoader makes one. A Loader is not safe for concurrent use.
//
// The package-level LoadDir, LoadFiles and LoadSource are shorthands for a
// fresh Loader, for callers that only need the model.
type Loader struct {
	parser *hclparse.Parser
}

// NewLoader returns an empty Loader.
func NewLoader() *Loader {
	return &Loader{parser: hclparse.NewParser()}
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
	names, diags := specFiles(paths)
	if diags.HasErrors() {
		return nil, diags
	}
	var files []*hcl.File
	for _, name := range names {
		f, fdiags := l.parser.ParseHCLFile(name)
		diags = append(diags, fdiags...)
		if f != nil {
			files = append(files, f)
		}
	}
	return l.load(files, diags, opts)
}

// LoadSource is the package-level LoadSource, keeping the parsed file.
func (l *Loader) LoadSource(filename string, src []byte, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	f, diags := l.parser.ParseHCL(src, filename)
	var files []*hcl.File
	if f != nil {
		files = append(files, f)
	}
	return l.load(files, diags, opts)
}

// Files returns every file the loader parsed, by filename, for WriteDiagnostics.
func (l *Loader) Files() map[string]*hcl.File {
	return l.parser.Files()
}

// WriteDiagnostics renders diags with snippets from the files this loader
// parsed. See the package-level WriteDiagnostics.
func (l *Loader) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics) {
	WriteDiagnostics(w, l.Files(), diags)
}

// load runs decode and build over parsed files. Syntax errors stop the load
// before decoding: a half-parsed file would only add noise.
func (l *Loader) load(files []*hcl.File, diags hcl.Diagnostics, opts LoadOptions) (*model.Platform, hcl.Diagnostics) {
	if diags.HasErrors() || len(files) == 0 {
		return nil, sortDiagnostics(diags)
	}
	cfg, ddiags := decode(files)
	diags = append(diags, ddiags...)
	diags = append(diags, checkVars(opts.Vars)...)
	p, bdiags := build(cfg, newEvalContext())
	diags = append(diags, bdiags...)
	diags = sortDiagnostics(diags)
	if diags.HasErrors() {
		return nil, diags
	}
	return p, diags
}

// checkVars rejects -var values: no spec can declare a variable yet.
func checkVars(vars map[string]string) hcl.Diagnostics {
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	var diags hcl.Diagnostics
	for _, name := range names {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Value for undeclared variable",
			Detail: fmt.Sprintf("A value was given for variable %q, but the spec declares no variables (the spec language has no variable blocks yet). Remove the -var option.",
				name),
		})
	}
	return diags
}

// specFiles expands paths into the ordered list of files to parse.
func specFiles(paths []string) ([]string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if clean := filepath.Clean(name); !seen[clean] {
			seen[clean] = true
			out = append(out, name)
		}
	}
	if len(paths) == 0 {
		return nil, hcl.Diagnostics{{
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
			if e.IsDir() || !isSpecFile(e.Name()) {
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
	return out, diags
}

// isSpecFile selects *.hcl, skipping hidden files and editor leftovers.
func isSpecFile(name string) bool {
	return strings.HasSuffix(name, SpecFileExt) &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "#") &&
		!strings.HasSuffix(name, "~")
}
