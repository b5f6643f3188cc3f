package policy

func init() {
	register(Rule{
		ID: "PDK-401", Title: "Agent Sandbox not pinned", Severity: Error, Kind: Static,
		Control:   "The Agent Sandbox controller runs the exact release the spec pins, never a moving tag",
		Checklist: []string{"H12"},
		Fix:       "Remove image (it defaults to the pinned release image), or tag it with the release version, or pin a digest.",
		check: func(c *checker) {
			r := &c.p.AgentSandbox
			if r.Image == "" {
				return
			}
			_, tag, digest := imageRef(r.Image)
			if digest != "" || r.Digest != "" {
				return
			}
			src := r.Attrs.At("image", r.Src)
			switch {
			case tag == "" || tag == "latest":
				c.report("agent_sandbox", src, "The Agent Sandbox controller image %q follows a moving tag, not release %s.", r.Image, r.Version)
			case tag != r.Version:
				c.report("agent_sandbox", src, "The Agent Sandbox controller image %q is tagged %q, but the spec pins release %s.", r.Image, tag, r.Version)
			}
		},
	})
}
