package pulumitest

import "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

// What GCPOutputs gives the outputs GCP computes, for tests to expect.
const (
	MockEndpoint = "203.0.113.10"
	MockCA       = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
)

// MockSinkWriter is the writer identity GCPOutputs gives log sink sink.
func MockSinkWriter(sink string) string {
	return "serviceAccount:service-" + sink + "@gcp-sa-logging.iam.gserviceaccount.com"
}

// GCPOutputs is a Mocks.Outputs for the GCP outputs programs read: a
// cluster's endpoint and CA (the kubeconfig), a service account's email,
// member and name (IAM bindings, KSA annotations), a sink's writer identity
// (the grant on its destination).
func GCPOutputs(typ string, inputs, state resource.PropertyMap) {
	str := func(k string) string {
		if v, ok := inputs[resource.PropertyKey(k)]; ok && v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	switch typ {
	case "gcp:container/cluster:Cluster":
		state["endpoint"] = resource.NewStringProperty(MockEndpoint)
		state["masterAuth"] = resource.NewObjectProperty(resource.PropertyMap{
			"clusterCaCertificate": resource.NewStringProperty(MockCA),
		})
	case "gcp:serviceaccount/account:Account":
		email := str("accountId") + "@" + str("project") + ".iam.gserviceaccount.com"
		state["email"] = resource.NewStringProperty(email)
		state["member"] = resource.NewStringProperty("serviceAccount:" + email)
		state["name"] = resource.NewStringProperty("projects/" + str("project") + "/serviceAccounts/" + email)
	case "gcp:logging/projectSink:ProjectSink":
		state["writerIdentity"] = resource.NewStringProperty(MockSinkWriter(str("name")))
	}
}
