# pin: PULUMI_VERSION
# The Pulumi CLI. The version is linked in: the Automation API refuses some commands
# from a CLI that reports none.
echo "step: build pulumi"
go build -v -trimpath -o "$OUT/pulumi" \
  -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
  github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
