// Package bench measures Paddock on the live local stack: provisioning
// against kubectl and a parallel server-side-apply floor, no-op up (and its
// --full Pulumi path), drift, destroy against a floor that deletes the same
// objects directly, and peak memory per process (Provision); validate on
// generated specs (Validate); sandbox start through claims (Claims,
// offered to users as `paddock bench claims`); and the egress gateway's
// requests per second and added latency against a direct connection to the
// same server, on the real node (Gateway). Results are written as JSON,
// a markdown report that judges the targets of issues 14 and 39 and compares
// with the results it replaced (Report, Baseline), and a PNG plot. Each
// provisioning run also records the API server's requests and paddock's
// checkpoint size; `make bench-limit` measures the spec's limit of 1,000
// tenants, whose figures join the other sizes' with the binary, machine and
// load average of each.
package bench
