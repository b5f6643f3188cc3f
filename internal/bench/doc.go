// Package bench measures Paddock on the live local stack: provisioning
// against kubectl and a parallel server-side-apply floor, no-op up (and its
// --full Pulumi path), drift, destroy against a floor that deletes the same
// objects directly, and peak memory per process (Provision); validate on
// generated specs (Validate); sandbox start through claims (Claims,
// offered to users as `paddock bench claims`); and the egress gateway's
// requests per second and added latency against a direct connection to the
// same server, on the real node (Gateway). Results are written as JSON,
// a markdown report that judges the targets of issue 14 and compares with
// the results it replaced (Report, Baseline), and a PNG plot.
package bench
