# The audit trail leaves the cluster: sandbox and claim lifecycle, sandbox
# logs, NetworkPolicy drops and admission rejections, without payloads.
audit_sink "bigquery" {
  kind        = "bigquery"
  destination = "${var.project}.agent_audit"
}
