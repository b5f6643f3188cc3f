# pin: PULUMI_LANGUAGE_GO_VERSION
# The Go language host, which `pulumi preview/up/refresh/destroy` runs for a
# `runtime: go` project (a `paddock init` repository, this one's Pulumi.yaml).
# It left the sdk/v3 module after v3.66.0 for a module of its own that the
# proxy does not serve, so this is the last release that carries it; the
# pinned CLI drives it (the e2e suite runs the four commands through it).
echo "step: build pulumi-language-go"
go build -v -trimpath -o "$OUT/pulumi-language-go" \
  -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_LANGUAGE_GO_VERSION" \
  github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go
