package model

// Hardened defaults, in one place. The spec decoder applies them to whatever the
// spec leaves unset; components never invent values of their own.
const (
	DefaultRunAsUser int64 = 10001
	DefaultTmpSize         = "512Mi"

	DefaultRequestsCPU              = "250m"
	DefaultRequestsMemory           = "512Mi"
	DefaultRequestsEphemeralStorage = "1Gi"
	DefaultLimitsCPU                = "1"
	DefaultLimitsMemory             = "1Gi"
	DefaultLimitsEphemeralStorage   = "2Gi"

	DefaultWarmPoolReplicas int32 = 1

	// ManagedByLabel marks every object Paddock creates, so sweeps and drift checks find them.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "paddock"
	PlatformLabel  = "paddock.dev/platform"
	TenantLabel    = "paddock.dev/tenant"

	// AgentRuntimeServiceAccount is the zero-permission identity sandbox pods run as.
	AgentRuntimeServiceAccount = "agent-runtime"
)

// ApplyResourceDefaults fills every unset request and limit with the hardened default.
func (r *Resources) ApplyResourceDefaults() {
	set := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	set(&r.RequestsCPU, DefaultRequestsCPU)
	set(&r.RequestsMemory, DefaultRequestsMemory)
	set(&r.RequestsEphemeralStorage, DefaultRequestsEphemeralStorage)
	set(&r.LimitsCPU, DefaultLimitsCPU)
	set(&r.LimitsMemory, DefaultLimitsMemory)
	set(&r.LimitsEphemeralStorage, DefaultLimitsEphemeralStorage)
}

// Labels returns the ownership labels for an object of this platform (and tenant, if any).
func (p *Platform) Labels(tenant string) map[string]string {
	l := map[string]string{ManagedByLabel: ManagedByValue, PlatformLabel: p.Name}
	if tenant != "" {
		l[TenantLabel] = tenant
	}
	return l
}
