package rules

import (
	"sort"

	"github.com/paddock-platform/paddock/gcpinputs"
)

func wiAddr(wi gcpinputs.WorkloadIdentityArgs) string {
	return "workload_identity." + wi.Namespace + "/" + wi.KSA
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
