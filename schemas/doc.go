// Package schemas is Paddock's spec language: it reads the HCL files that declare
// a platform and produces the typed model (package model) with the hardened
// defaults applied. It knows nothing of Pulumi, clusters, policy or the CLI.
//
// # Pipeline
//
// Loading runs in separate steps, after the shape of Terraform's
// internal/configs and Nomad's jobspec2:
//
//  1. parse (loader.go): every *.hcl file (and *.hcl.json, HCL's JSON
//     syntax) is parsed. Syntax errors of all files are reported together
//     and stop the load there. Vars files (*.pvars.hcl) are parsed too.
//  2. decode (decode.go): bodies are matched against the language tree
//     (schema.go) into nodes that hold block labels, attribute expressions
//     and source ranges. Everything that is knowable without evaluating an
//     expression is checked here: unknown blocks and arguments (with "Did you
//     mean" hints), labels, names, duplicates across files, blocks that must
//     appear exactly once.
//  3. evaluate (variables.go, evaluate.go, functions.go): variables get their
//     values (default < PADDOCK_VAR_<name> < *.auto.pvars.hcl < --var-file <
//     -var), are converted to their type and validated; locals are evaluated
//     in dependency order. Both land in the one *hcl.EvalContext every
//     expression is evaluated in; a tenant with for_each gets a child context
//     holding each.key and each.value.
//  4. build (build.go): every expression is evaluated, converted to its Go
//     type, validated (required values, Kubernetes quantities, references
//     between blocks) and laid over the defaults of internal/model/defaults.go.
//
// Policy (package policy) runs on the model afterwards; nothing after this
// package reads HCL. For target "gke" policy also runs the GCP layer's
// validity rules (GCP-001..017, package internal/gcpinputs/rules) on the model
// mapped to the GCP layer's inputs, with the ranges of the arguments they
// concern; the decoder leaves those checks (nested virtualisation of a machine
// series, FQDN policy without Dataplane V2, ...) to them.
//
// # Diagnostics
//
// All problems of one run are collected, never only the first, each once.
// Every diagnostic that comes from a file carries a Subject range; the only
// ones without are about the inputs themselves (no such directory, no *.hcl
// files, a -var for a variable that is not declared). Diagnostics are sorted
// by file and position. WriteDiagnostics (and Loader.WriteDiagnostics, which
// already holds the parsed files) renders them for humans, Terraform style.
//
// A load either returns a non-nil *model.Platform and no error diagnostics, or
// nil and at least one error.
//
// # Sensitive values
//
// A variable with sensitive = true marks its value; the mark follows every
// expression that uses it. Such values never reach a diagnostic: their text is
// redacted to "(sensitive value)", a diagnostic about a sensitive value given
// in a vars file points at the variable's declaration instead of the file,
// and a validation error_message that includes the value is withheld. The
// model records them (model.Platform.MarkSensitive): every string of a
// sensitive argument, and the keys of a label map that is sensitive as a
// whole (a key may be built from a sensitive value), so policy reports and
// later stages can redact and treat them as secrets, and policy can refuse
// one that reaches a name or label (PDK-610).
//
// # Resource bounds
//
// Loading a spec is bounded in time and memory whatever the spec says:
// files are read only when they are regular files within a size and token
// budget, and nesting and operator chains are bounded before the recursive
// parser sees them (limits.go); numbers stay within ±1e1000 (numbers.go;
// converting larger ones to text takes seconds to hours); range() and
// function results are bounded (functions.go); format widths and indent are
// bounded too. Limits lists the bounds a spec author meets, and `paddock
// schema` prints them. The fuzz targets (fuzz_test.go) hold a load to ten
// seconds per input.
//
// # Language
//
// A spec is a set of flat top-level blocks, so a directory of files merges into
// one spec without any include mechanism. `paddock schema` prints every block
// and argument with its description (the tree of schema.go); in short:
//
//	variable "project" { type = string, default = "...", sensitive = false, validation { condition, error_message } }
//	locals { image = "..." }
//	platform { name = "my-platform" }                   # exactly one
//	target "local" {}                                   # exactly one: "local",
//	target "kubeconfig" { path, context }               #   an existing cluster,
//	target "gke" { project, location, cluster_name }    #   or a GKE cluster Paddock creates
//	cluster { release_channel, private_nodes, authorized_networks, dataplane_v2, workload_identity, deletion_protection, fqdn_network_policy, allow_replacement }   # gke only
//	node_pool "sandboxes" { isolation = "gvisor" | "kvm", machine_type, autoscaling { min, max }, labels, taint {...}, dedicated }   # gke only
//	agent_sandbox { version = "v0.5.6", image, digest } # exactly one
//	runtime_class "gvisor" { handler = "runsc", node_pool, node_selector = {...}, toleration {...}, overhead = {...} }
//	tenant "team-a" {
//	  for_each     = var.teams                          # optional: one tenant per key (each.key, each.value)
//	  namespace    = "agents-team-a"                    # default "agents-<tenant>"
//	  pod_security = "restricted"                       # or "baseline", flagged (PDK-101); audit and warn stay restricted
//	  quota        { pods, cpu, memory, ephemeral_storage, pvcs, storage, enabled }
//	  limit_range  { default = {...}, default_request = {...}, enabled }
//	  identity {
//	    orchestrator = true
//	    tool_gateway_token { audience, expiration, path }
//	    workload_identity "orchestrator" | "agent" { roles = ["roles/storage.objectViewer"] }   # gke only; "agent" is flagged (PDK-207)
//	  }
//	  egress       { dns = true, fqdns = [...], allow { cidr, ports, protocol }, proxy { url, namespace, pod_labels, cidr }, default_deny }
//	  claims       { ttl = "10m", max_ttl = "4h", shutdown_policy = "Delete" }   # every claim must set spec.lifecycle.shutdownTime (RFC 3339) at most max_ttl after its metadata.creationTimestamp; max_ttl = "none" (waiver of PDK-406) drops the maximum and the requirement
//	  template "python" {
//	    image, command, args, runtime_class, run_as_user, tmp_size, env = {...}
//	    resources { requests = {...}, limits = {...}, unbounded = [...] }
//	    workspace { kind = "ephemeral" | "persistent", size, mount_path, storage_class }
//	    secret_env "LLM_API_KEY" { secret, key, optional }
//	    # loosening knobs, each flagged by policy: run_as_non_root, allow_privilege_escalation,
//	    # privileged, read_only_root, add_capabilities, seccomp_profile, automount_token
//	  }
//	  warm_pool "python" { template = "python", replicas = 2, update_strategy = "Recreate" }   # "OnReplenish" keeps stale sandboxes in the pool (PDK-410)
//	}
//	audit_sink "audit" { kind = "bigquery" | "storage" | "pubsub", destination, filters = [...], include_payloads }   # filters: sandbox_lifecycle, rbac, pod_logs, network_drops, admission
//	waiver { rule = "PDK-306", reason = "...", expires = "2026-12-31", scope = "tenant.team-a" }
//
// Hardened values are the defaults; loosening one takes an explicit
// argument, which policy reports. See examples/ for a commented spec per
// target, and examples/insecure for one that loosens everything.
package schemas
