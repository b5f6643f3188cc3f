package policy

func init() {
	register(Rule{
		ID: "PDK-310", Title: "Sandbox runtime verified with a test pod", Severity: Error, Kind: Live,
		Control:   "gVisor or Kata is really installed on the nodes: a test pod with the runtime class reaches Running and reports the sandbox kernel",
		Checklist: []string{"H8"},
		Fix:       "Run `paddock verify`: it starts a pod under each runtime class and checks it runs sandboxed (dmesg shows gVisor, or a guest kernel for Kata).",
	})
}
