package gcp

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// WorkloadIdentity is a tenant identity's cloud access: a Google service
// account holding exactly the given project roles, impersonable only by one
// Kubernetes service account through GKE Workload Identity. It never has a key.
type WorkloadIdentity struct {
	pulumi.ResourceState

	// Email is the Google service account's email.
	Email pulumi.StringOutput `pulumi:"email"`
	// Member is the only principal allowed to impersonate it:
	// serviceAccount:PROJECT.svc.id.goog[NAMESPACE/KSA].
	Member pulumi.StringOutput `pulumi:"member"`
	// KSAAnnotations are the annotations the in-cluster layer puts on the
	// Kubernetes service account: iam.gke.io/gcp-service-account = Email.
	KSAAnnotations pulumi.StringMapOutput `pulumi:"ksaAnnotations"`

	Args WorkloadIdentityArgs
	// Ready are the account and its bindings: what waits for the identity
	// depends on them, not on the component (see NodePool.Pool).
	Ready []pulumi.Resource
}

// NewWorkloadIdentity registers the identity. The cluster must exist first:
// its workload pool is created with it, and binding a member of a pool that
// does not exist yet fails.
func NewWorkloadIdentity(ctx *pulumi.Context, name string, cluster *Cluster, args *WorkloadIdentityArgs, opts ...pulumi.ResourceOption) (*WorkloadIdentity, error) {
	w := &WorkloadIdentity{}
	if err := ctx.RegisterComponentResource("paddock:gcp:WorkloadIdentity", name, w, opts...); err != nil {
		return nil, err
	}
	a := *args
	if a.Project == "" {
		a.Project = cluster.Args.Project
	}
	if a.AccountID == "" {
		a.AccountID = gcpinputs.ServiceAccountID(a.Platform, a.Tenant, a.KSA)
	}
	w.Args = a
	if cluster.Args.DisableWorkloadIdentity {
		return nil, fmt.Errorf("workload identity %s: the cluster has no workload pool", name)
	}
	parent := pulumi.Parent(w)
	sa, err := serviceaccount.NewAccount(ctx, name, &serviceaccount.AccountArgs{
		Project:     pulumi.String(a.Project),
		AccountId:   pulumi.String(a.AccountID),
		DisplayName: pulumi.String(fmt.Sprintf("Paddock %s/%s", a.Namespace, a.KSA)),
		Description: pulumi.String(fmt.Sprintf("Cloud identity of Kubernetes service account %s/%s (tenant %s), managed by Paddock. No keys.", a.Namespace, a.KSA, a.Tenant)),
	}, parent, pulumi.DeleteBeforeReplace(true))
	if err != nil {
		return nil, err
	}
	w.Ready = append(w.Ready, sa)
	for _, role := range a.Roles {
		grant, err := projects.NewIAMMember(ctx, name+"/"+role, &projects.IAMMemberArgs{
			Project: pulumi.String(a.Project),
			Role:    pulumi.String(role),
			Member:  sa.Member,
		}, parent)
		if err != nil {
			return nil, err
		}
		w.Ready = append(w.Ready, grant)
	}
	member := gcpinputs.WorkloadIdentityMember(a.Project, a.Namespace, a.KSA)
	binding, err := serviceaccount.NewIAMMember(ctx, name+"/"+gcpinputs.WorkloadIdentityUser, &serviceaccount.IAMMemberArgs{
		ServiceAccountId: sa.Name,
		Role:             pulumi.String(gcpinputs.WorkloadIdentityUser),
		Member:           pulumi.String(member),
	}, parent, pulumi.DependsOn([]pulumi.Resource{cluster.GKE}))
	if err != nil {
		return nil, err
	}
	w.Ready = append(w.Ready, binding)
	w.Email = sa.Email
	w.Member = pulumi.String(member).ToStringOutput()
	w.KSAAnnotations = sa.Email.ApplyT(func(email string) map[string]string {
		return map[string]string{gcpinputs.KSAAnnotation: email}
	}).(pulumi.StringMapOutput)
	return w, ctx.RegisterResourceOutputs(w, pulumi.Map{"email": w.Email, "member": w.Member, "ksaAnnotations": w.KSAAnnotations})
}
