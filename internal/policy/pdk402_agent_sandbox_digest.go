package policy

func init() {
	register(Rule{
		ID: "PDK-402", Title: "Agent Sandbox image not pinned by digest", Severity: Note, Kind: Static,
		Control:   "The controller image is pinned by content, so a re-pushed tag cannot change what runs",
		Checklist: []string{"H12"},
		Fix:       "Set agent_sandbox.digest to the release image's digest (`crane digest registry.k8s.io/agent-sandbox/agent-sandbox-controller:<version>`).",
		check: func(c *checker) {
			r := &c.p.AgentSandbox
			if _, _, digest := imageRef(r.Image); r.Image == "" || digest != "" || r.Digest != "" {
				return
			}
			c.report("agent_sandbox", r.Src, "The Agent Sandbox controller image %q is pinned by tag only.", r.Image)
		},
	})
}
