// Package cilium only pins github.com/cilium/cilium; see go.mod.
package cilium
