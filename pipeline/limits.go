package pipeline

import "time"

// RateLimitConfig configures admission.
type RateLimitConfig struct {
	GlobalRPS   float64 // 0: unlimited
	GlobalBurst int     // default max(1, int(GlobalRPS))
	TenantRPS   float64 // 0: unlimited
	TenantBurst int     // default max(1, int(TenantRPS))
	OnLimit     string  // OnLimitDegrade (default) or OnLimitReject
}

// BulkheadConfig limits concurrent calls into a tier.
type BulkheadConfig struct {
	MaxConcurrent int
	MaxQueue      int
	QueueTimeout  time.Duration
}
