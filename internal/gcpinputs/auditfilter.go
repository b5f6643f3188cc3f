package gcpinputs

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The Cloud Logging query the sinks use. Kubernetes API audit entries on GKE
// are Admin Activity audit logs of resource type k8s_cluster; their methodName
// is the API group reversed, the version, the resource and the verb
// ("io.k8s.authorization.rbac.v1.roles.create",
// "io.x-k8s.agents.extensions.v1beta1.sandboxclaims.delete"), and their
// resourceName the group/version/namespaces/NS/resource/name path. Every clause
// matches the method (group, resource, verb) *and* the namespace from the
// resource name. Regexes use [.] rather than \. so no escaping is needed inside
// the query's quoted strings.

var (
	writeVerbs  = "(create|update|patch|delete|deletecollection)"
	createDrop  = "(create|delete|deletecollection)"
	versionPart = "v[^.]+"
)

// AuditFilter builds the Cloud Logging filter of a sink: one self-contained
// clause per event, ORed, each scoped to the cluster (and, where the event is
// namespaced, to the tenant namespaces). It is deterministic: namespaces are
// sorted and de-duplicated, events are emitted in AuditEvents() order.
func AuditFilter(a AuditFilterArgs) (string, error) {
	if a.Project == "" || a.Location == "" || a.ClusterName == "" {
		return "", fmt.Errorf("audit filter: project, location and cluster name are required")
	}
	events := a.Events
	if events == nil {
		events = DefaultAuditEvents()
	}
	want := map[string]bool{}
	for _, e := range events {
		if !isAuditEvent(e) {
			return "", fmt.Errorf("audit filter: unknown event %q (want one of %s)", e, strings.Join(AuditEvents(), ", "))
		}
		want[e] = true
	}
	if len(want) == 0 {
		return "", fmt.Errorf("audit filter: no events selected")
	}
	ns := namespaceRegex(a.Namespaces)
	activity := fmt.Sprintf(`logName="projects/%s/logs/cloudaudit.googleapis.com%%2Factivity"`, a.Project)
	cluster := fmt.Sprintf(`resource.labels.location="%s" AND resource.labels.cluster_name="%s"`, a.Location, a.ClusterName)

	var auditParts []string
	if want[EventSandboxLifecycle] {
		auditParts = append(auditParts,
			fmt.Sprintf(`(protoPayload.methodName=~"^io[.]x-k8s[.]agents[.]%s[.]sandboxes[.]%s$" AND protoPayload.resourceName=~"^agents[.]x-k8s[.]io/%s/namespaces/%s/")`,
				versionPart, createDrop, "v[^/]+", ns),
			fmt.Sprintf(`(protoPayload.methodName=~"^io[.]x-k8s[.]agents[.]extensions[.]%s[.]sandboxclaims[.]%s$" AND protoPayload.resourceName=~"^extensions[.]agents[.]x-k8s[.]io/%s/namespaces/%s/")`,
				versionPart, createDrop, "v[^/]+", ns),
			fmt.Sprintf(`(protoPayload.methodName=~"^io[.]x-k8s[.]agents[.]extensions[.]%s[.](sandboxtemplates|sandboxwarmpools)[.]%s$" AND protoPayload.resourceName=~"^extensions[.]agents[.]x-k8s[.]io/%s/namespaces/%s/")`,
				versionPart, writeVerbs, "v[^/]+", ns),
		)
	}
	if want[EventRBAC] {
		auditParts = append(auditParts,
			fmt.Sprintf(`(protoPayload.methodName=~"^io[.]k8s[.]authorization[.]rbac[.]v1[.](roles|rolebindings)[.]%s$" AND protoPayload.resourceName=~"^rbac[.]authorization[.]k8s[.]io/v1/namespaces/%s/")`,
				writeVerbs, ns),
			fmt.Sprintf(`protoPayload.methodName=~"^io[.]k8s[.]authorization[.]rbac[.]v1[.](clusterroles|clusterrolebindings)[.]%s$"`, writeVerbs),
		)
	}
	if want[EventAdmission] {
		auditParts = append(auditParts,
			fmt.Sprintf(`(protoPayload.resourceName=~"/namespaces/%s/" AND (protoPayload.status.code=7 OR protoPayload.status.code=3))`, ns))
	}

	var clauses []string
	if len(auditParts) > 0 {
		clauses = append(clauses, fmt.Sprintf("(%s AND resource.type=\"k8s_cluster\" AND %s AND (\n    %s\n  ))",
			activity, cluster, strings.Join(auditParts, "\n    OR ")))
	}
	if want[EventPodLogs] {
		clauses = append(clauses, fmt.Sprintf(`(resource.type="k8s_container" AND %s AND resource.labels.namespace_name=~"^%s$" AND (logName="projects/%s/logs/stdout" OR logName="projects/%s/logs/stderr"))`,
			cluster, ns, a.Project, a.Project))
	}
	if want[EventNetworkDrops] {
		clauses = append(clauses, fmt.Sprintf(`(logName="projects/%s/logs/policy-action" AND resource.type="k8s_node" AND %s AND jsonPayload.disposition="deny" AND (jsonPayload.src.pod_namespace=~"^%s$" OR jsonPayload.dest.pod_namespace=~"^%s$"))`,
			a.Project, cluster, ns, ns))
	}
	return strings.Join(clauses, "\nOR\n"), nil
}

func isAuditEvent(e string) bool {
	for _, k := range AuditEvents() {
		if e == k {
			return true
		}
	}
	return false
}

// namespaceRegex is "(a|b)" for the given namespaces (sorted, de-duplicated,
// quoted for RE2), or "[^/]+" for none.
func namespaceRegex(namespaces []string) string {
	set := map[string]bool{}
	for _, n := range namespaces {
		if n != "" {
			set[n] = true
		}
	}
	if len(set) == 0 {
		return "[^/]+"
	}
	list := make([]string, 0, len(set))
	for n := range set {
		list = append(list, quoteRE(n))
	}
	sort.Strings(list)
	return "(" + strings.Join(list, "|") + ")"
}

// quoteRE quotes regex metacharacters with character classes (no backslashes,
// which the query language would treat as escapes). Namespace names are DNS
// labels, so in practice nothing changes.
func quoteRE(s string) string {
	q := regexp.QuoteMeta(s)
	if q == s {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteString("[" + string(r) + "]")
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// QuotaExceededFilter is the log filter of the quota-saturation alert: a write
// into a tenant namespace refused because a ResourceQuota is exhausted.
func QuotaExceededFilter(project, location, cluster string, namespaces []string) string {
	return fmt.Sprintf(`logName="projects/%s/logs/cloudaudit.googleapis.com%%2Factivity" AND resource.type="k8s_cluster" AND resource.labels.location="%s" AND resource.labels.cluster_name="%s" AND protoPayload.resourceName=~"/namespaces/%s/" AND protoPayload.status.message:"exceeded quota"`,
		project, location, cluster, namespaceRegex(namespaces))
}

// SandboxUptimeFilter is the Cloud Monitoring filter of the lifetime alert: the
// uptime of containers in the tenant namespaces.
func SandboxUptimeFilter(location, cluster string, namespaces []string) string {
	ns := namespaceRegex(namespaces)
	if ns == "[^/]+" {
		ns = ".*"
	}
	return fmt.Sprintf(`metric.type="kubernetes.io/container/uptime" AND resource.type="k8s_container" AND resource.labels.location="%s" AND resource.labels.cluster_name="%s" AND resource.labels.namespace_name=monitoring.regex.full_match("%s")`,
		location, cluster, ns)
}
