package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragfuse/ragfuse/breaker"
)

// statusCollector reports gauges read from pipeline.Status at scrape
// time: breaker states, bulkhead occupancy, cache sizes and the
// knowledge-base version. Reading at scrape time shows a breaker whose
// open period ended as half-open even if no question has touched it since.
type statusCollector struct{ o *Observer }

var (
	descBreakerState = prometheus.NewDesc("ragfuse_breaker_state",
		"Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"breaker"}, nil)
	descBreakerRejected = prometheus.NewDesc("ragfuse_breaker_rejected_total",
		"Calls a breaker refused since start.", []string{"breaker"}, nil)
	descBulkheadInFlight = prometheus.NewDesc("ragfuse_bulkhead_in_flight",
		"Calls in flight inside a tier's bulkhead.", []string{"tier"}, nil)
	descBulkheadQueued = prometheus.NewDesc("ragfuse_bulkhead_queued",
		"Calls waiting for room in a tier's bulkhead.", []string{"tier"}, nil)
	descCacheEntries = prometheus.NewDesc("ragfuse_cache_entries",
		"Entries held by a cache tier, over all tenants.", []string{"tier"}, nil)
	descKBVersion = prometheus.NewDesc("ragfuse_knowledge_base_version",
		"Version of the loaded knowledge base; it increases on each reload.", nil, nil)
)

// Describe implements prometheus.Collector.
func (statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBreakerState, descBreakerRejected, descBulkheadInFlight,
		descBulkheadQueued, descCacheEntries, descKBVersion} {
		ch <- d
	}
	describeShared(ch)
}

// Collect implements prometheus.Collector.
func (sc statusCollector) Collect(ch chan<- prometheus.Metric) {
	f := sc.o.status.Load()
	if f == nil {
		return
	}
	st := (*f)()
	for _, b := range st.Breakers {
		ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, stateValue(b.State), b.Name)
		ch <- prometheus.MustNewConstMetric(descBreakerRejected, prometheus.CounterValue, float64(b.Rejected), b.Name)
	}
	for _, b := range st.Bulkheads {
		ch <- prometheus.MustNewConstMetric(descBulkheadInFlight, prometheus.GaugeValue, float64(b.InFlight), b.Tier)
		ch <- prometheus.MustNewConstMetric(descBulkheadQueued, prometheus.GaugeValue, float64(b.Queued), b.Tier)
	}
	for _, c := range st.Caches {
		ch <- prometheus.MustNewConstMetric(descCacheEntries, prometheus.GaugeValue, float64(c.Entries), c.Tier)
		collectShared(ch, c)
	}
	if st.KnowledgeBase.Loaded {
		ch <- prometheus.MustNewConstMetric(descKBVersion, prometheus.GaugeValue, float64(st.KnowledgeBase.Version))
	}
}

// stateValue maps a breaker state to the gauge value.
func stateValue(s breaker.State) float64 {
	switch s {
	case breaker.StateHalfOpen:
		return 1
	case breaker.StateOpen:
		return 2
	}
	return 0
}
