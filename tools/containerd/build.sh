# pin: CONTAINERD_VERSION
# containerd (CRI for the local stack's real node), its ctr client (image import) and
# the runc shim (system pods). CGO is off, as for every tool: containerd then builds
# without the btrfs snapshotter, which the local node does not use (overlayfs).
module=github.com/containerd/containerd/v2
ld="-s -w -X $module/version.Version=$CONTAINERD_VERSION"
for c in containerd ctr containerd-shim-runc-v2; do
  echo "step: build $c"
  go build -v -trimpath -o "$OUT/$c" -ldflags "$ld" "$module/cmd/$c"
done
