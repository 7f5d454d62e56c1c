package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragfuse/ragfuse/pipeline"
)

// The metrics of a semantic cache shared through Redis, read from
// pipeline.Status at scrape time.
var (
	descSharedHealthy = prometheus.NewDesc("ragfuse_cache_shared_healthy",
		"1 while the Redis that shares a cache tier answers, else 0.", []string{"tier"}, nil)
	descSharedQueued = prometheus.NewDesc("ragfuse_cache_shared_queued",
		"Entries of a shared cache tier waiting to be written to Redis.", []string{"tier"}, nil)
	descSharedDropped = prometheus.NewDesc("ragfuse_cache_shared_dropped_total",
		"Entries of a shared cache tier never written to Redis: the queue was full and the oldest went.", []string{"tier"}, nil)
	descSharedWritten = prometheus.NewDesc("ragfuse_cache_shared_written_total",
		"Entries of a shared cache tier written to Redis.", []string{"tier"}, nil)
	descSharedReceived = prometheus.NewDesc("ragfuse_cache_shared_received_total",
		"Entries other instances stored that a shared cache tier received.", []string{"tier"}, nil)
	descSharedLoads = prometheus.NewDesc("ragfuse_cache_shared_loads_total",
		"Loads of the live entries from Redis: at start, after an outage, after falling behind the stream.", []string{"tier"}, nil)
)

func describeShared(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSharedHealthy, descSharedQueued, descSharedDropped, descSharedWritten,
		descSharedReceived, descSharedLoads} {
		ch <- d
	}
}

// collectShared reports the sharing of cache tier c, nothing for a local
// cache.
func collectShared(ch chan<- prometheus.Metric, c pipeline.CacheStatus) {
	sh := c.Shared
	if sh == nil {
		return
	}
	healthy := 0.0
	if sh.Healthy {
		healthy = 1
	}
	ch <- prometheus.MustNewConstMetric(descSharedHealthy, prometheus.GaugeValue, healthy, c.Tier)
	ch <- prometheus.MustNewConstMetric(descSharedQueued, prometheus.GaugeValue, float64(sh.Queued), c.Tier)
	ch <- prometheus.MustNewConstMetric(descSharedDropped, prometheus.CounterValue, float64(sh.Dropped), c.Tier)
	ch <- prometheus.MustNewConstMetric(descSharedWritten, prometheus.CounterValue, float64(sh.Written), c.Tier)
	ch <- prometheus.MustNewConstMetric(descSharedReceived, prometheus.CounterValue, float64(sh.Received), c.Tier)
	ch <- prometheus.MustNewConstMetric(descSharedLoads, prometheus.CounterValue, float64(sh.Loads), c.Tier)
}
