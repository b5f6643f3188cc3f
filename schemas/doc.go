// Package schemas is Paddock's spec language: it reads the HCL files that declare
// a platform and produces the typed model (package model) with the hardened
// defaults applied. It knows nothing of Pulumi, clusters or the CLI.
//
// # Pipeline
//
// Loading runs in three separate steps, after the shape of Terraform's
// internal/configs and Nomad's jobspec2:
//
//  1. parse (loader.go): every *.hcl file is parsed with hclsyntax. Syntax
//     errors of all files are reported together and stop the load there.
//  2. decode (decode.go): bodies are matched against the block schemas
//     (schema.go) into unevaluated config structs that hold block labels,
//     attribute expressions and source ranges. Everything that is knowable
//     without evaluating an expression is checked here: unknown blocks and
//     arguments (with "Did you mean" hints), labels, names, duplicates across
//     files, blocks that must appear exactly once.
//  3. build (build.go): every expression is evaluated in one *hcl.EvalContext
//     (evaluate.go, functions.go), converted to its Go type, validated
//     (required values, Kubernetes quantities, references between blocks) and
//     defaulted from the constants of model/defaults.go.
//
// Variables and locals will slot into step 3: they only add names to the
// EvalContext that newEvalContext builds. Nothing after this package reads HCL.
//
// # Diagnostics
//
// All problems of one run are collected, never only the first. Every
// diagnostic that comes from a file carries a Subject range; the only ones
// without are about the inputs themselves (no such directory, no *.hcl files,
// a -var for a variable that is not declared). Diagnostics are sorted by
// file and position. WriteDiagnostics (and Loader.WriteDiagnostics, which
// already holds the parsed files) renders them for humans.
//
// A load either returns a non-nil *model.Platform and no error diagnostics, or
// nil and at least one error.
//
// # Language
//
// A spec is a set of flat top-level blocks, so a directory of files merges into
// one spec without any include mechanism:
//
//	platform { name = "local-demo" }            # exactly one
//	target "local" {}                           # exactly one: "local" or "kubeconfig" { path, context }
//	agent_sandbox { version = "v0.5.6" }        # exactly one; image defaults to the pinned controller image
//	runtime_class "gvisor" { handler = "runsc", node_selector = {...}, toleration {...} }
//	tenant "team-a" {
//	  namespace = "agents-team-a"               # default "agents-<tenant>"
//	  template "python" { image = "...", command = [...], args = [...], runtime_class = "gvisor",
//	                      run_as_user = 10001, tmp_size = "512Mi", resources { requests = {...}, limits = {...} } }
//	  warm_pool "python" { template = "python", replicas = 2 }
//	}
//	waiver { rule = "PDK-...", reason = "...", expires = "2026-12-31" }
//
// See examples/local/platform.hcl for a commented example.
package schemas
