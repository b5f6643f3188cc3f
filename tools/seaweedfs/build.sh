# pin: SEAWEEDFS_VERSION
# SeaweedFS's weed, for tests only (Makefile TEST_TOOLS): internal/s3test runs
# its S3 gateway on loopback as the s3:// backend the engine's tests read and
# the Pulumi CLI writes. Only the one binary is built.
echo "step: build weed"
go build -v -trimpath -o "$OUT/weed" \
  -ldflags "-s -w -X github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT=${SEAWEEDFS_VERSION##*-}" \
  github.com/seaweedfs/seaweedfs/weed
