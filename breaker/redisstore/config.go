package redisstore

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/clock"
)

// Defaults of Config.
const (
	DefaultPrefix          = "ragfuse"
	DefaultOpTimeout       = 50 * time.Millisecond
	DefaultFlushInterval   = 50 * time.Millisecond
	DefaultRetryInterval   = 250 * time.Millisecond
	DefaultStartTimeout    = time.Second
	DefaultWindow          = 10 * time.Second
	DefaultWindowBuckets   = 10
	DefaultStateTTL        = 24 * time.Hour
	DefaultMemberTTL       = 15 * time.Second
	maxBuckets             = 60 // buckets read per name and flush, at most
	minBucketWidth         = time.Millisecond
	defaultInstanceIDBytes = 8
)

// Config configures New. Zero fields take the defaults written beside them.
type Config struct {
	// Client is the Redis client to use. If nil, New connects to URL and
	// Close closes that connection; a Client given here is left open. A
	// Client should have ContextTimeoutEnabled set, so that OpTimeout also
	// bounds its socket reads and writes (New sets it for URL).
	Client redis.UniversalClient
	// URL is a redis:// or rediss:// URL, used when Client is nil.
	URL string
	// Prefix namespaces every key and the channel; default "ragfuse".
	Prefix string
	// Instance identifies this process in probe leases and announcements;
	// default a random hex string.
	Instance string
	// OpTimeout bounds every Redis call; default 50ms.
	OpTimeout time.Duration
	// FlushInterval is how often recorded outcomes and announcements are
	// sent to Redis; default 50ms.
	FlushInterval time.Duration
	// RetryInterval is how often an unreachable Redis is tried again;
	// default 250ms.
	RetryInterval time.Duration
	// StartTimeout bounds New's wait for the first subscription; default 1s.
	// New does not fail when Redis is unreachable: the store starts
	// unhealthy and keeps trying.
	StartTimeout time.Duration
	// Window and WindowBuckets shape the cluster-wide aggregate of a
	// breaker with a count-based window (a time-based breaker window is
	// reused as is, with at most 60 buckets); default 10s in 10 buckets.
	Window        time.Duration
	WindowBuckets int
	// StateTTL is how long a shared state outlives its last announcement;
	// default 24h.
	StateTTL time.Duration
	// MemberTTL is how long an instance's knowledge-base state outlives
	// its last heartbeat (every MemberTTL/3); default 15s.
	MemberTTL time.Duration
	// Clock places outcomes in time buckets and measures how long a shared
	// cooldown's key lives (until its end); nil means clock.System.
	// Probe leases and key expiry run on Redis time.
	Clock clock.Clock
	// Logger receives one Warn when Redis becomes unreachable and one Info
	// when it is back; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Instance == "" {
		var b [defaultInstanceIDBytes]byte
		_, _ = rand.Read(b[:])
		c.Instance = hex.EncodeToString(b[:])
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.WindowBuckets <= 0 {
		c.WindowBuckets = DefaultWindowBuckets
	}
	if c.StateTTL <= 0 {
		c.StateTTL = DefaultStateTTL
	}
	if c.MemberTTL <= 0 {
		c.MemberTTL = DefaultMemberTTL
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
