// Package bench measures Paddock on the live local stack: provisioning
// against kubectl and a parallel server-side-apply floor, no-op up, drift,
// destroy and peak memory per process (Provision), validate on generated
// specs (Validate), and sandbox start through claims (Claims, offered to
// users as `paddock bench claims`). Results are written as JSON, a markdown
// table and a PNG plot (Report).
package bench
