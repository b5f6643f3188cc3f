package policy

func init() {
	register(Rule{
		ID: "PDK-310", Title: "Sandbox runtime verified with a test pod", Severity: Error, Kind: Live,
		Control:   "gVisor or Kata is really installed on the nodes: a test pod with the runtime class reaches Running and reports the sandbox kernel",
		Checklist: []string{"H8"},
		Fix:       "Run `paddock verify`: it checks each runtime class has the spec's handler and scheduling and that nodes match it, and that running sandbox pods sit on those nodes. It starts no test pod: to see the sandbox kernel, run one under the runtime class and read its dmesg (gVisor's, or a guest kernel for Kata).",
		Verify:    []string{"V05", "V06"},
	})
}
