# pin: PULUMI_KUBERNETES_VERSION
# The Kubernetes provider. Upstream's main embeds a generated schema the module lacks,
# so main.go here embeds the two JSON files, taken from the pinned module itself (its
# go.sum hash pins them). The module must be downloaded before its directory is asked
# for: `go list -m -f {{.Dir}}` prints nothing for a module not yet in the cache.
module=github.com/pulumi/pulumi-kubernetes/provider/v4
echo "step: download $module"
go mod download "$module"
echo "step: copy schema.json and terraform-mapping.json from $module"
dir=$(go list -m -f '{{.Dir}}' "$module")
[ -n "$dir" ] && [ -d "$dir" ] || { echo "build: $module is not in the module cache after download (got '$dir')" >&2; exit 1; }
install -m 0644 "$dir/cmd/pulumi-resource-kubernetes/schema.json" schema.json
install -m 0644 "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" terraform-mapping.json
echo "step: build pulumi-resource-kubernetes"
go build -v -trimpath -o "$OUT/pulumi-resource-kubernetes" \
  -ldflags "-s -w -X $module/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" .
