# pin: AGENT_SANDBOX_PREVIOUS_VERSION
# The previous Agent Sandbox release's controller, for the upgrade and rollback
# e2e test only (Makefile TEST_TOOLS). It gets its own binary name, so it sits
# beside the pinned controller; the local stack's supervisor runs the build that
# matches the installed release (internal/manifests/agentsandbox.ControllerBinary).
echo "step: build agent-sandbox-controller-$AGENT_SANDBOX_PREVIOUS_VERSION"
go build -v -trimpath -o "$OUT/agent-sandbox-controller-$AGENT_SANDBOX_PREVIOUS_VERSION" \
  -ldflags "-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$AGENT_SANDBOX_PREVIOUS_VERSION" \
  sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller
