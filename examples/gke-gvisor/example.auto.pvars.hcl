# Loaded automatically: every *.auto.pvars.hcl next to the spec. Keep
# per-environment values in other *.pvars.hcl files and pass them with
# --var-file prod.pvars.hcl.
project = "paddock-example-prod"
