// Package scaffold writes a new platform repository: a Pulumi project whose
// program is Paddock's (Pulumi.yaml, main.go, go.mod), one stack config file,
// a starter spec (Paddock's local example), a scheduled drift workflow and a
// README. `paddock init` runs it. It never overwrites a file: Write checks
// every target before it writes the first one.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"text/template"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/paddock-platform/paddock/internal/pins"
)

//go:embed templates
var templates embed.FS

// PaddockModule is the module path of Paddock, which the new repository requires.
const PaddockModule = "github.com/paddock-platform/paddock"

// pulumiSDKModule is the Pulumi SDK the program's main.go imports.
const pulumiSDKModule = "github.com/pulumi/pulumi/sdk/v3"

// GoVersion is the go directive of Paddock's own go.mod: a module that
// builds Paddock's program needs at least that Go. A unit test keeps the two
// equal.
const GoVersion = "1.26.6"

// SpecDir is where the starter spec goes, relative to the repository root.
const SpecDir = "spec"

// DefaultStack is the stack `paddock init` writes a config file for.
const DefaultStack = "dev"

// maxNameLength keeps the tenant namespace the starter spec derives from the
// platform's name ("agents-" + name) within a DNS label's 63 characters.
const maxNameLength = 63 - len("agents-")

// Options are what a new platform repository is made of.
type Options struct {
	// Name is the platform's name (the spec's platform_name, set in the
	// stack file) and the Pulumi project's name. A DNS-1123 label.
	Name string
	// Stack is the stack whose config file is written (default DefaultStack).
	Stack string
	// Module is the new repository's Go module path (default
	// DefaultModule(Name)).
	Module string
	// PaddockVersion is the version of Paddock go.mod requires. With
	// Replace set it may be empty (go.mod then requires the placeholder Go
	// uses for a replaced module).
	PaddockVersion string
	// Replace, when set, is the absolute path of a local Paddock checkout
	// that go.mod's replace directive points at.
	Replace string
}

// DefaultModule is the Go module path a repository named name gets when none is given.
func DefaultModule(name string) string { return "example.com/" + name + "/platform" }

// replacedVersion is the version Go itself writes for a module that a
// replace directive supplies and that has no version of its own.
const replacedVersion = "v0.0.0-00010101000000-000000000000"

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a platform name: a DNS-1123 label (lower case letters,
// digits and '-', starting and ending with a letter or digit), short enough
// that the tenant namespace derived from it is one too.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("the platform name is empty")
	case len(name) > maxNameLength:
		return fmt.Errorf("platform name %q is %d characters long: at most %d, so that its tenant namespace agents-%s fits in a DNS label", name, len(name), maxNameLength, name)
	case !dnsLabel.MatchString(name):
		return fmt.Errorf("platform name %q is not a DNS-1123 label: use lower case letters, digits and '-', starting and ending with a letter or digit", name)
	}
	return nil
}

var stackName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidateStack checks a stack name: one Pulumi accepts and that names a
// file (stacks/Pulumi.<stack>.yaml).
func ValidateStack(stack string) error {
	if len(stack) > 100 || !stackName.MatchString(stack) {
		return fmt.Errorf("stack name %q: use at most 100 letters, digits, '-', '_' and '.', starting with a letter or digit", stack)
	}
	return nil
}

// ValidateVersion checks a version of Paddock given by hand: a canonical
// semantic version (a release tag or a pseudo-version) valid for Paddock's
// module path.
func ValidateVersion(v string) error {
	if err := module.Check(PaddockModule, v); err != nil {
		return fmt.Errorf("paddock version %q: %w", v, err)
	}
	if semver.Canonical(v) != v {
		return fmt.Errorf("paddock version %q is not canonical: write %s", v, semver.Canonical(v))
	}
	return nil
}

func (o *Options) normalize() error {
	if o.Stack == "" {
		o.Stack = DefaultStack
	}
	if o.Module == "" {
		o.Module = DefaultModule(o.Name)
	}
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if err := ValidateStack(o.Stack); err != nil {
		return err
	}
	if err := module.CheckPath(o.Module); err != nil {
		return fmt.Errorf("module path %q: %w", o.Module, err)
	}
	switch {
	case o.PaddockVersion != "":
		if err := ValidateVersion(o.PaddockVersion); err != nil {
			return err
		}
	case o.Replace == "":
		return errors.New("no Paddock version to require, and no local checkout to replace it with")
	}
	if o.Replace != "" && !path.IsAbs(strings.ReplaceAll(o.Replace, `\`, "/")) {
		return fmt.Errorf("replace path %q is not absolute", o.Replace)
	}
	return nil
}

// File is one file of the repository.
type File struct {
	// Path is slash-separated, relative to the repository root.
	Path string
	Data []byte
}

// layout maps each file of the repository to its template; "" is go.mod,
// which is built with modfile so that module paths are quoted correctly.
func layout(stack string) []struct{ path, tmpl string } {
	return []struct{ path, tmpl string }{
		{"Pulumi.yaml", "Pulumi.yaml.tmpl"},
		{"main.go", "main.go.tmpl"},
		{"go.mod", ""},
		{"stacks/Pulumi." + stack + ".yaml", "stack.yaml.tmpl"},
		{SpecDir + "/platform.hcl", "platform.hcl.tmpl"},
		{".github/workflows/paddock-drift.yml", "paddock-drift.yml.tmpl"},
		{"README.md", "README.md.tmpl"},
	}
}

// templateData is what the templates see.
type templateData struct {
	Options
	SpecDir             string
	AgentSandboxVersion string
	GoVersion           string
}

// Render returns the repository's files, in the order they are listed to a
// person. It validates the options first.
func Render(o Options) ([]File, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	data := templateData{Options: o, SpecDir: SpecDir, AgentSandboxVersion: pins.AgentSandbox, GoVersion: GoVersion}
	var files []File
	for _, l := range layout(o.Stack) {
		var b []byte
		var err error
		if l.tmpl == "" {
			b, err = goMod(o)
		} else {
			b, err = render(l.tmpl, data)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		files = append(files, File{Path: l.path, Data: b})
	}
	return files, nil
}

// render fills one template. The delimiters are <% %>: the files hold GitHub
// expressions (${{ }}) and HCL interpolations (${ }) of their own.
func render(name string, data templateData) ([]byte, error) {
	text, err := templates.ReadFile("templates/" + name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Delims("<%", "%>").Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// goMod is the new module's go.mod: Paddock at the given version (and the
// Pulumi SDK main.go imports, at the version Paddock pins), optionally
// replaced by a local checkout. No go.sum: `go mod tidy` writes it.
func goMod(o Options) ([]byte, error) {
	f := &modfile.File{Syntax: &modfile.FileSyntax{}}
	if err := f.AddModuleStmt(o.Module); err != nil {
		return nil, err
	}
	if err := f.AddGoStmt(GoVersion); err != nil {
		return nil, err
	}
	v := o.PaddockVersion
	if v == "" {
		v = replacedVersion
	}
	f.AddNewRequire(PaddockModule, v, false)
	f.AddNewRequire(pulumiSDKModule, pins.Pulumi, false)
	f.SetRequireSeparateIndirect(f.Require)
	if o.Replace != "" {
		if err := f.AddReplace(PaddockModule, "", o.Replace, ""); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}
