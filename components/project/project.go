// Package project is the Pulumi project view of a platform repository: the
// Pulumi.yaml at its root, one stack config file per team or environment
// (stacks/Pulumi.<stack>.yaml), the paddock:* config keys those files hold, and
// the one Pulumi program both `pulumi up` (cmd/paddock-pulumi) and
// `paddock up --stack` run (Program). A stack's config names the spec, its
// variables (secret ones through Pulumi config secrets) and, optionally, the
// cluster; the spec is loaded and gated by policy exactly as the CLI does
// (specload.Load), so both paths provision the same resource graph.
package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// The config keys a stack config file sets (namespace "paddock").
const (
	// KeySpec is the spec: a directory of .hcl files or one file, relative to
	// the project directory (where Pulumi.yaml is). Required.
	KeySpec = "paddock:spec"
	// KeyVars are the spec's variables, by name (an object). Plain values only.
	KeyVars = "paddock:vars"
	// KeySecretVars are sensitive variables, by name, each set with
	// `pulumi config set --secret --path 'paddock:secretVars.NAME' VALUE`:
	// encrypted in the stack file, marked sensitive in the model and kept
	// secret in the state.
	KeySecretVars = "paddock:secretVars"
	// KeyVarFiles are vars files (*.pvars.hcl), relative to the project
	// directory, in rising precedence.
	KeyVarFiles = "paddock:varFiles"
	// KeyTarget optionally points the spec's local or kubeconfig target at
	// another cluster: {"kubeconfig": PATH, "context": NAME}.
	KeyTarget = specload.TargetConfigKey
)

// Keys are every key this package reads, in the order a person would write them.
var Keys = []string{KeySpec, KeyVars, KeySecretVars, KeyVarFiles, KeyTarget}

// Value is one config value as Pulumi hands it over: the text (JSON for
// objects and lists) and whether the key holds a secret.
type Value struct {
	Value  string
	Secret bool
}

// Config is a stack's paddock:* config.
type Config struct {
	// Spec is the spec path as written in the stack file.
	Spec string
	// Vars are plain variables as -var would give them: strings as is,
	// anything else as an HCL expression (JSON is one).
	Vars map[string]string
	// SecretVars are the sensitive variables, in the same form.
	SecretVars map[string]string
	// VarFiles are vars files as written in the stack file.
	VarFiles []string
	// Target, when set, overrides the spec's target cluster.
	Target *specload.Target
}

// Parse reads the paddock:* keys of a stack's config (keys of other
// namespaces are ignored; unknown paddock:* keys are an error, so a typo does
// not silently drop a setting).
func Parse(values map[string]Value) (*Config, error) {
	known := map[string]bool{}
	for _, k := range Keys {
		known[k] = true
	}
	var unknown []string
	for k := range values {
		if strings.HasPrefix(k, "paddock:") && !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown config key(s) %s: Paddock reads %s", strings.Join(unknown, ", "), strings.Join(Keys, ", "))
	}
	c := &Config{}
	spec, ok := values[KeySpec]
	if !ok || strings.TrimSpace(spec.Value) == "" {
		return nil, fmt.Errorf("%s is not set: `pulumi config set %s PATH` names the spec (a directory of .hcl files, relative to Pulumi.yaml)", KeySpec, KeySpec)
	}
	if spec.Secret {
		return nil, fmt.Errorf("%s is a secret: the spec path must be plain config", KeySpec)
	}
	c.Spec = spec.Value
	var err error
	if v, ok := values[KeyVars]; ok {
		if v.Secret {
			return nil, fmt.Errorf("%s holds a secret value: put sensitive variables under %s (`pulumi config set --secret --path '%s.NAME' VALUE`) so Paddock knows which ones to keep secret", KeyVars, KeySecretVars, KeySecretVars)
		}
		if c.Vars, err = varMap(KeyVars, v.Value); err != nil {
			return nil, err
		}
	}
	if v, ok := values[KeySecretVars]; ok {
		if !v.Secret {
			return nil, fmt.Errorf("%s is stored in plain text: set each one with `pulumi config set --secret --path '%s.NAME' VALUE`", KeySecretVars, KeySecretVars)
		}
		if c.SecretVars, err = varMap(KeySecretVars, v.Value); err != nil {
			return nil, err
		}
	}
	for name := range c.SecretVars {
		if _, dup := c.Vars[name]; dup {
			return nil, fmt.Errorf("variable %q is set in both %s and %s: keep it in one", name, KeyVars, KeySecretVars)
		}
	}
	if v, ok := values[KeyVarFiles]; ok {
		if err := json.Unmarshal([]byte(v.Value), &c.VarFiles); err != nil {
			return nil, fmt.Errorf("%s must be a list of file paths: %w", KeyVarFiles, err)
		}
	}
	if v, ok := values[KeyTarget]; ok {
		dec := json.NewDecoder(strings.NewReader(v.Value))
		dec.DisallowUnknownFields()
		var t specload.Target
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf(`%s must be an object {"kubeconfig": PATH, "context": NAME}: %w`, KeyTarget, err)
		}
		c.Target = &t
	}
	return c, nil
}

// varMap decodes a JSON object of variables into -var form.
func varMap(key, text string) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("%s must be an object of variable names to values: %w", key, err)
	}
	out := make(map[string]string, len(raw))
	for name, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[name] = s
			continue
		}
		// Numbers, bools, lists and objects: JSON is valid HCL expression syntax.
		out[name] = string(v)
	}
	return out, nil
}

// AllVars are the plain and secret variables together.
func (c *Config) AllVars() map[string]string {
	out := make(map[string]string, len(c.Vars)+len(c.SecretVars))
	for k, v := range c.Vars {
		out[k] = v
	}
	for k, v := range c.SecretVars {
		out[k] = v
	}
	return out
}

// SensitiveValues are the values of the secret variables (and, for
// structured ones, every string inside), which the model must treat as
// sensitive.
func (c *Config) SensitiveValues() []string {
	var out []string
	for _, v := range c.SecretVars {
		out = append(out, v)
		var any interface{}
		if json.Unmarshal([]byte(v), &any) == nil {
			collectStrings(any, &out)
		}
	}
	sort.Strings(out)
	return out
}

func collectStrings(v interface{}, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []interface{}:
		for _, e := range x {
			collectStrings(e, out)
		}
	case map[string]interface{}:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}

// ProjectFile is the name of a Pulumi project file.
const ProjectFile = "Pulumi.yaml"

// Find returns the nearest directory at or above dir holding a Pulumi.yaml.
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ProjectFile)); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no %s in %s or any directory above it", ProjectFile, abs)
		}
		d = parent
	}
}

// Load reads the project's Pulumi.yaml.
func Load(dir string) (*workspace.Project, error) {
	p, err := workspace.LoadProject(filepath.Join(dir, ProjectFile))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, ProjectFile), err)
	}
	return p, nil
}

// StackFile is the path of a stack's config file in the project at dir
// (Pulumi.<stack>.yaml in the project's stackConfigDir).
func StackFile(dir, stack string) (string, error) {
	p, err := Load(dir)
	if err != nil {
		return "", err
	}
	cfgDir := dir
	if p.StackConfigDir != "" {
		cfgDir = filepath.Join(dir, p.StackConfigDir)
	}
	// A qualified name (org/project/stack) keeps its last part, as Pulumi does.
	name := stack
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return filepath.Join(cfgDir, "Pulumi."+name+".yaml"), nil
}

// ErrNoStackFile is returned (wrapped) by StackFileFor when the stack has no
// config file in the project.
var ErrNoStackFile = errors.New("no stack config file")

// StackFileFor finds the project above dir and the config file of stack in it.
func StackFileFor(dir, stack string) (projectDir, file string, err error) {
	projectDir, err = Find(dir)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrNoStackFile, err)
	}
	file, err = StackFile(projectDir, stack)
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(file); err != nil {
		return projectDir, file, fmt.Errorf("%w: %s does not exist", ErrNoStackFile, file)
	}
	return projectDir, file, nil
}

// Stacks lists the stacks that have a config file in the project at dir
// (Pulumi.<stack>.yaml in its stackConfigDir), sorted by name.
func Stacks(dir string) ([]string, error) {
	probe, err := StackFile(dir, "x")
	if err != nil {
		return nil, err
	}
	cfgDir := filepath.Dir(probe)
	files, err := filepath.Glob(filepath.Join(cfgDir, "Pulumi.*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml")
		if name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}
