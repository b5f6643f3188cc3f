package rules

import (
	"github.com/paddock-platform/paddock/gcpinputs"
)

func wiAddr(wi gcpinputs.WorkloadIdentityArgs) string {
	return "workload_identity." + wi.Namespace + "/" + wi.KSA
}
