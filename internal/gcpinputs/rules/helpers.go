package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func wiAddr(wi gcpinputs.WorkloadIdentityArgs) string {
	return "workload_identity." + wi.Namespace + "/" + wi.KSA
}
