package gcp

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/bigquery"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/logging"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/pubsub"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/storage"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// AuditSink ships the platform's audit trail out of the cluster: a project log
// sink with its own writer identity, filtered to the events of gcpinputs.AuditFilter,
// into a BigQuery dataset, a Cloud Storage bucket (uniform access, public
// access prevented, retention policy) or a Pub/Sub topic that Paddock creates;
// the writer identity may only write there.
type AuditSink struct {
	pulumi.ResourceState

	// WriterIdentity is the sink's own service account.
	WriterIdentity pulumi.StringOutput `pulumi:"writerIdentity"`
	Destination    pulumi.StringOutput `pulumi:"destination"`
	Filter         pulumi.StringOutput `pulumi:"filter"`

	Args AuditSinkArgs
}

// NewAuditSink registers the destination, the sink and the writer's grant.
// args.Filter must be complete (project, location, cluster), as
// PlatformArgs.WithDefaults makes it.
func NewAuditSink(ctx *pulumi.Context, name string, args *AuditSinkArgs, opts ...pulumi.ResourceOption) (*AuditSink, error) {
	s := &AuditSink{}
	if err := ctx.RegisterComponentResource("paddock:gcp:AuditSink", name, s, opts...); err != nil {
		return nil, err
	}
	a := *args
	if a.Location == "" {
		a.Location = gcpinputs.DefaultAuditLocation
	}
	s.Args = a
	filter, err := gcpinputs.AuditFilter(a.Filter)
	if err != nil {
		return nil, fmt.Errorf("audit sink %s: %w", name, err)
	}
	dest, err := gcpinputs.SinkDestination(a)
	if err != nil {
		return nil, err
	}
	parent := pulumi.Parent(s)
	labels := pulumi.ToStringMap(gcpinputs.GCPLabels(a.Filter.ClusterName, a.Labels))
	day := 24 * 60 * 60

	// The destination, created before the sink so the first entries land.
	var destRes pulumi.Resource
	switch a.Kind {
	case gcpinputs.AuditBigQuery:
		dargs := &bigquery.DatasetArgs{
			Project:     pulumi.String(a.Project),
			DatasetId:   pulumi.String(a.Destination),
			Location:    pulumi.String(a.Location),
			Description: pulumi.String("Paddock audit trail of cluster " + a.Filter.ClusterName),
			Labels:      labels,
			// Audit records are evidence: destroying the stack keeps them.
			DeleteContentsOnDestroy: pulumi.Bool(false),
		}
		if a.RetentionDays > 0 {
			dargs.DefaultTableExpirationMs = pulumi.Int(a.RetentionDays * day * 1000)
		}
		destRes, err = bigquery.NewDataset(ctx, name, dargs, parent)
	case gcpinputs.AuditStorage:
		retention := a.RetentionDays
		if retention == 0 {
			retention = gcpinputs.DefaultAuditRetentionDays
		}
		destRes, err = storage.NewBucket(ctx, name, &storage.BucketArgs{
			Project:                  pulumi.String(a.Project),
			Name:                     pulumi.String(a.Destination),
			Location:                 pulumi.String(a.Location),
			UniformBucketLevelAccess: pulumi.Bool(true),
			PublicAccessPrevention:   pulumi.String("enforced"),
			RetentionPolicy: &storage.BucketRetentionPolicyArgs{
				RetentionPeriod: pulumi.Int(retention * day),
				IsLocked:        pulumi.Bool(a.LockRetention),
			},
			ForceDestroy: pulumi.Bool(false),
			Labels:       labels,
		}, parent)
	case gcpinputs.AuditPubSub:
		targs := &pubsub.TopicArgs{
			Project: pulumi.String(a.Project),
			Name:    pulumi.String(a.Destination),
			Labels:  labels,
		}
		if a.RetentionDays > 0 {
			targs.MessageRetentionDuration = pulumi.String(fmt.Sprintf("%ds", a.RetentionDays*day))
		}
		destRes, err = pubsub.NewTopic(ctx, name, targs, parent)
	}
	if err != nil {
		return nil, err
	}

	sargs := &logging.ProjectSinkArgs{
		Project:              pulumi.String(a.Project),
		Name:                 pulumi.String(a.Name),
		Description:          pulumi.String("Paddock audit trail of cluster " + a.Filter.ClusterName),
		Destination:          pulumi.String(dest),
		Filter:               pulumi.String(filter),
		UniqueWriterIdentity: pulumi.Bool(true),
	}
	if a.Kind == gcpinputs.AuditBigQuery {
		sargs.BigqueryOptions = &logging.ProjectSinkBigqueryOptionsArgs{UsePartitionedTables: pulumi.Bool(true)}
	}
	sink, err := logging.NewProjectSink(ctx, name, sargs, parent, pulumi.DependsOn([]pulumi.Resource{destRes}))
	if err != nil {
		return nil, err
	}

	// The writer identity may write into this destination and nothing else.
	role := pulumi.String(gcpinputs.SinkWriterRole(a.Kind))
	switch a.Kind {
	case gcpinputs.AuditBigQuery:
		_, err = bigquery.NewDatasetIamMember(ctx, name+"-writer", &bigquery.DatasetIamMemberArgs{
			Project: pulumi.String(a.Project), DatasetId: pulumi.String(a.Destination), Role: role, Member: sink.WriterIdentity,
		}, parent, pulumi.DependsOn([]pulumi.Resource{destRes}))
	case gcpinputs.AuditStorage:
		_, err = storage.NewBucketIAMMember(ctx, name+"-writer", &storage.BucketIAMMemberArgs{
			Bucket: pulumi.String(a.Destination), Role: role, Member: sink.WriterIdentity,
		}, parent, pulumi.DependsOn([]pulumi.Resource{destRes}))
	case gcpinputs.AuditPubSub:
		_, err = pubsub.NewTopicIAMMember(ctx, name+"-writer", &pubsub.TopicIAMMemberArgs{
			Project: pulumi.String(a.Project), Topic: pulumi.String(a.Destination), Role: role, Member: sink.WriterIdentity,
		}, parent, pulumi.DependsOn([]pulumi.Resource{destRes}))
	}
	if err != nil {
		return nil, err
	}
	s.WriterIdentity = sink.WriterIdentity
	s.Destination = pulumi.String(dest).ToStringOutput()
	s.Filter = pulumi.String(filter).ToStringOutput()
	return s, ctx.RegisterResourceOutputs(s, pulumi.Map{"writerIdentity": s.WriterIdentity, "destination": s.Destination, "filter": s.Filter})
}
