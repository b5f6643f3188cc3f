# pin: AGENT_SANDBOX_VERSION
# The Agent Sandbox controller, run outside the cluster by the local stack.
echo "step: build agent-sandbox-controller"
go build -v -trimpath -o "$OUT/agent-sandbox-controller" \
  -ldflags "-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$AGENT_SANDBOX_VERSION" \
  sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller
