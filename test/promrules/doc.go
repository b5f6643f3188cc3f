// Package promrules checks Paddock's PrometheusRule with Prometheus' own rule
// parser. It is a module of its own because github.com/prometheus/prometheus
// would move the k8s.io modules the main module pins; the root module's
// `go test ./...` and `go vet ./...` do not enter it. Run it with
// `cd test/promrules && go test ./...`.
package promrules
