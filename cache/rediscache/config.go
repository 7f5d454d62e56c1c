package rediscache

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ragfuse/ragfuse/cache"
)

// Defaults of Config.
const (
	DefaultPrefix        = "ragfuse"
	DefaultOpTimeout     = 50 * time.Millisecond
	DefaultBlock         = 500 * time.Millisecond
	DefaultRetryInterval = 250 * time.Millisecond
	DefaultQueueSize     = 4096
	DefaultBatchSize     = 128
	DefaultStreamMaxLen  = 10000
	DefaultLoadLimit     = 100000
)

// Config configures New. Zero fields take the defaults written beside them.
type Config struct {
	// Cache configures the local cache that New builds; its Replica is
	// set by New, and its Clock also dates the keys' expiry.
	Cache cache.Config
	// Client is the Redis client to use. If nil, New connects to URL and
	// Close closes that connection; a Client given here is left open. A
	// Client should have ContextTimeoutEnabled set, so that OpTimeout also
	// bounds its socket reads and writes (New sets it for URL).
	Client redis.UniversalClient
	// URL is a redis:// or rediss:// URL, used when Client is nil.
	URL string
	// Prefix namespaces every key and the stream; default "ragfuse".
	Prefix string
	// Instance identifies this process in the entries it announces, so
	// that it skips its own; default a random hex string.
	Instance string
	// OpTimeout bounds every Redis call but the stream's blocking read
	// and a load's pages (max(20 x OpTimeout, 1s) each); default 50ms.
	OpTimeout time.Duration
	// Block is how long one read of the stream waits for news; default
	// 500ms.
	Block time.Duration
	// RetryInterval is how often an unreachable Redis is tried again;
	// default 250ms.
	RetryInterval time.Duration
	// QueueSize bounds the entries waiting to be written; beyond it the
	// oldest is dropped (ShareStatus.Dropped); default 4096.
	QueueSize int
	// BatchSize is how many entries one round trip writes at most;
	// default 128.
	BatchSize int
	// StreamMaxLen is the stream's approximate length (XADD MAXLEN ~); an
	// instance that falls further behind loads the entries again; default
	// 10000.
	StreamMaxLen int64
	// LoadLimit bounds the entries one load reads, those expiring last
	// first; default 100000.
	LoadLimit int
	// Logger receives one Warn when Redis becomes unreachable, one Info
	// when it is back and one Info per finished load; nil means
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Instance == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.Instance = hex.EncodeToString(b[:])
	}
	c.OpTimeout = orDefault(c.OpTimeout, DefaultOpTimeout)
	c.Block = orDefault(c.Block, DefaultBlock)
	c.RetryInterval = orDefault(c.RetryInterval, DefaultRetryInterval)
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.StreamMaxLen <= 0 {
		c.StreamMaxLen = DefaultStreamMaxLen
	}
	if c.LoadLimit <= 0 {
		c.LoadLimit = DefaultLoadLimit
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
