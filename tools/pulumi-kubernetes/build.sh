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
# Paddock constructs none of the provider's component resources (yaml/v2, helm.sh/v4
# Chart, kustomize/v2 Directory): they run only for programs that use them, and yaml/v2
# alone pulls in 64 generated SDK packages, most of this build. The build uses a copy
# of the pinned module whose provider_construct.go has those factories cut out (a `go
# build -overlay` may not replace a file in the module cache), through a temporary
# go.mod with a replace; a program that asks for a component gets the provider's own
# "unknown resource type" error. The cut is checked, so a new upstream layout fails
# here instead of quietly building everything.
echo "step: copy $module without its component resources (yaml/v2, helm.sh/v4, kustomize/v2)"
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$dir" "$work/provider"
chmod -R u+w "$work/provider"
construct="$work/provider/pkg/provider/provider_construct.go"
sed -E -e '/^\t(provideryamlv2|providerhelmv4|providerkustomizev2) "/d' \
  -e '/^\t"kubernetes:(yaml\/v2|helm\.sh\/v4|kustomize\/v2):[A-Za-z]+": /d' "$dir/pkg/provider/provider_construct.go" >"$construct"
removed=$(( $(wc -l <"$dir/pkg/provider/provider_construct.go") - $(wc -l <"$construct") ))
if [ "$removed" -ne 7 ] || grep -qE 'provideryamlv2|providerhelmv4|providerkustomizev2' "$construct"; then
  echo "build: $dir/pkg/provider/provider_construct.go no longer has the 3 imports and 4 factories this recipe removes (removed $removed lines); update the recipe for this provider version" >&2
  exit 1
fi
cp go.mod "$work/build.mod"; cp go.sum "$work/build.sum"
echo "replace $module => $work/provider" >>"$work/build.mod"
echo "step: build pulumi-resource-kubernetes"
go build -v -trimpath -modfile "$work/build.mod" -o "$OUT/pulumi-resource-kubernetes" \
  -ldflags "-s -w -X $module/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" .
