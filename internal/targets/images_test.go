package targets

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
)

func platformWithImages(images ...string) *model.Platform {
	var tpls []model.Template
	for i, img := range images {
		tpls = append(tpls, model.Template{
			Name: "t" + string(rune('a'+i)), Image: img,
			Attrs: model.Attrs{"image": {Filename: "spec/platform.hcl", Line: 10 + i, Column: 5}},
		})
	}
	return &model.Platform{Tenants: []model.Tenant{{Name: "team-a", Templates: tpls}}}
}

var realNode = localcluster.NodeStatus{Name: "paddock-node-0", Ready: true, Real: true,
	Images: []string{"localhost/paddock/busybox:v1", "localhost/paddock/pause:v1", "docker.io/library/alpine:3.20"}}

func TestLocalImagesOnARealNode(t *testing.T) {
	if err := checkLocalImages(platformWithImages("localhost/paddock/busybox:v1", "alpine:3.20"), []localcluster.NodeStatus{realNode}); err != nil {
		t.Fatalf("images the node holds were refused: %v", err)
	}
	err := checkLocalImages(platformWithImages("localhost/paddock/busybox:v1", "python:3.12-slim", "localhost/paddock/busybox", "localhost/paddock/busybox:latest"), []localcluster.NodeStatus{realNode})
	if err == nil {
		t.Fatal("an image the node lacks was accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`spec/platform.hcl:11:5: tenant "team-a" template "tb": image "python:3.12-slim" is not on the node`,
		`spec/platform.hcl:12:5: tenant "team-a" template "tc": image "localhost/paddock/busybox" is pulled on every start`,
		`spec/platform.hcl:13:5: tenant "team-a" template "td": image "localhost/paddock/busybox:latest" is pulled on every start`,
		localcluster.SandboxImage,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `template "ta"`) {
		t.Errorf("the refusal names a template whose image is on the node:\n%s", msg)
	}
}

func TestLocalImagesOnKwokNodes(t *testing.T) {
	kwok := []localcluster.NodeStatus{{Name: "paddock-node-0", Ready: true}}
	if err := checkLocalImages(platformWithImages("python:3.12-slim"), kwok); err != nil {
		t.Fatalf("kwok nodes run nothing, so any image will do: %v", err)
	}
}

// A gateway whose image the node did not import (paddock-gateway was not
// built beside paddock, or paddock was rebuilt since `local up`) is refused
// before anything is applied: its pods could never start (pull policy Never).
func TestLocalGatewayImageOnARealNode(t *testing.T) {
	p := platformWithImages("localhost/paddock/busybox:v1")
	p.Tenants[0].EgressGateway = &model.EgressGateway{Image: "localhost/paddock/gateway:0123456789ab",
		Src: model.Range{Filename: "spec/platform.hcl", Line: 20, Column: 3}}
	err := checkLocalImages(p, []localcluster.NodeStatus{realNode})
	if err == nil {
		t.Fatal("a gateway image the node lacks was accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`spec/platform.hcl:20:3: tenant "team-a" egress_gateway: image "localhost/paddock/gateway:0123456789ab" is not on the node`,
		"paddock local down && paddock local up",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "--nodes fake") {
		t.Errorf("the refusal gives the templates' fix though every template's image is held:\n%s", msg)
	}
	held := realNode
	held.Images = append(append([]string(nil), realNode.Images...), "localhost/paddock/gateway:0123456789ab")
	if err := checkLocalImages(p, []localcluster.NodeStatus{held}); err != nil {
		t.Errorf("a gateway image the node holds was refused: %v", err)
	}
}
