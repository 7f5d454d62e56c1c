package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/breaker"
	"github.com/ragfuse/ragfuse/pipeline"
	"github.com/ragfuse/ragfuse/tiers"
)

// StatusResponse is the body of GET /v1/status.
type StatusResponse struct {
	Tiers         []TierInfo                 `json:"tiers"`
	Breakers      []BreakerInfo              `json:"breakers"`
	Bulkheads     []pipeline.BulkheadStatus  `json:"bulkheads"`
	Caches        []CacheInfo                `json:"caches"`
	KnowledgeBase pipeline.KnowledgeBaseInfo `json:"knowledge_base"`
	RateLimit     RateLimitInfo              `json:"rate_limit"`
	Store         pipeline.StoreStatus       `json:"store"`
	Cooldowns     []CooldownInfo             `json:"cooldowns"`
	Probes        []ProbeInfo                `json:"probes"` // the models probed actively (models.<id>.probe)
	// Cluster is every live instance's knowledge base, with redis.url
	// (GET /v1/status only, not the console's feed).
	Cluster *pipeline.ClusterStatus `json:"cluster,omitempty"`
}

// ProbeInfo is the prober of one model: its settings and its last probe
// request, sent while the model's breaker was half-open.
type ProbeInfo struct {
	Model       string     `json:"model"`
	IntervalMS  int64      `json:"interval_ms"`
	TimeoutMS   int64      `json:"timeout_ms"`
	Probes      uint64     `json:"probes"`                  // probe requests this instance sent
	LastProbeAt *time.Time `json:"last_probe_at,omitempty"` // absent before the first
	LastOutcome string     `json:"last_outcome,omitempty"`  // success or a failure kind (timeout, server_error, ...)
	LastError   string     `json:"last_error,omitempty"`    // a short, secret-free description of the failure
}

// CooldownInfo is a model this instance skips after a 429, until Until.
type CooldownInfo struct {
	Model string    `json:"model"`
	Until time.Time `json:"until"`
}

// RateLimitInfo is the admission configuration in force.
type RateLimitInfo struct {
	GlobalRPS   float64 `json:"global_rps"` // 0: unlimited
	GlobalBurst int     `json:"global_burst"`
	TenantRPS   float64 `json:"tenant_rps"` // 0: unlimited
	TenantBurst int     `json:"tenant_burst"`
	OnLimit     string  `json:"on_limit"` // degrade or reject
}

// onLimit names what admission does over a rate limit, as on_limit does.
func onLimit(reject bool) string {
	if reject {
		return "reject"
	}
	return "degrade"
}

// TierInfo is one tier of the chain, in order.
type TierInfo struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"`
	TimeoutMS int64    `json:"timeout_ms"` // 0: bounded by the request's budget only
	Model     bool     `json:"model"`
	Models    []string `json:"models,omitempty"` // an llm tier's candidates, in order (breakers "model/<id>")
}

// BreakerInfo is one circuit breaker ("tier/<name>" or "model/<id>").
type BreakerInfo struct {
	Name                string     `json:"name"`
	State               string     `json:"state"` // closed, half_open, open
	Calls               int        `json:"calls"`
	Failures            int        `json:"failures"`
	SlowCalls           int        `json:"slow_calls"`
	SlowInFlight        int        `json:"slow_in_flight"` // calls still in flight for slow_call_duration, counted in calls and slow_calls
	FailureRate         float64    `json:"failure_rate"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	OpenUntil           *time.Time `json:"open_until,omitempty"`
	ProbesInFlight      int        `json:"probes_in_flight"`
	Trips               uint64     `json:"trips"`
	Rejected            uint64     `json:"rejected"`
	LastTrip            *TripInfo  `json:"last_trip,omitempty"` // what tripped it most recently; absent if it never tripped
}

// TripInfo is what tripped a breaker: the rule (cause: consecutive_failures,
// failure_rate, slow_call_rate, probe_failed, manual, cluster, remote), the
// outcome kind and short description of the call that crossed it (e.g.
// timeout, server_error "HTTP 503", auth "HTTP 401"), and when.
type TripInfo struct {
	Cause   string    `json:"cause"`
	Kind    string    `json:"kind,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// TenantStatusResponse is the body of GET /v1/status for a tenant (a
// tenant's key, or a client other than loopback when no keys are
// configured): the tiers in order, the breakers' states, from which a
// frontend may show a banner, and the tenant's own cache entries.
type TenantStatusResponse struct {
	Tenant   string                 `json:"tenant"`
	Tiers    []TierInfo             `json:"tiers"`
	Breakers []BreakerState         `json:"breakers"`
	Caches   []pipeline.CacheStatus `json:"caches"` // the tenant's entries
}

// BreakerState is a breaker as a tenant sees it: its state, and until
// when it stays open.
type BreakerState struct {
	Name      string     `json:"name"`
	State     string     `json:"state"` // closed, half_open, open
	OpenUntil *time.Time `json:"open_until,omitempty"`
}

// status serves GET /v1/status: the full StatusResponse to an admin (an
// admin key, or a loopback client when no keys are configured), the
// TenantStatusResponse of the requesting tenant to anyone else allowed in.
// Without keys, the tenant is named by X-Ragfuse-Tenant or ?tenant_id=.
func (s *Server) status(c echo.Context) error {
	name, err := s.admin(c)
	if err != nil {
		return err
	}
	if name == "" {
		return s.tenantStatus(c)
	}
	body := s.statusBody()
	body.Cluster = s.p.ClusterStatus(c.Request().Context())
	return c.JSON(http.StatusOK, body)
}

// statusBody returns the full body of GET /v1/status, an admin's.
func (s *Server) statusBody() StatusResponse {
	st := s.p.Status()
	out := StatusResponse{
		Tiers:         make([]TierInfo, 0, len(st.Tiers)),
		Breakers:      make([]BreakerInfo, 0, len(st.Breakers)),
		Bulkheads:     nonNil(st.Bulkheads),
		Caches:        make([]CacheInfo, 0, len(st.Caches)),
		KnowledgeBase: st.KnowledgeBase,
		RateLimit: RateLimitInfo{GlobalRPS: finiteRate(st.RateLimit.GlobalRPS), GlobalBurst: st.RateLimit.GlobalBurst,
			TenantRPS: finiteRate(st.RateLimit.TenantRPS), TenantBurst: st.RateLimit.TenantBurst, OnLimit: onLimit(st.RateLimit.Reject)},
		Store:     st.Store,
		Cooldowns: make([]CooldownInfo, 0, len(st.Cooldowns)),
		Probes:    make([]ProbeInfo, 0, len(st.Probes)),
	}
	for _, pr := range st.Probes {
		pi := ProbeInfo{Model: pr.Model, IntervalMS: pr.Interval.Milliseconds(), TimeoutMS: pr.Timeout.Milliseconds(),
			Probes: pr.Probes, LastOutcome: pr.LastOut, LastError: pr.LastError}
		if !pr.LastAt.IsZero() {
			t := pr.LastAt.UTC()
			pi.LastProbeAt = &t
		}
		out.Probes = append(out.Probes, pi)
	}
	for _, c := range st.Cooldowns {
		out.Cooldowns = append(out.Cooldowns, CooldownInfo{Model: c.Model, Until: c.Until.UTC()})
	}
	for _, t := range st.Tiers {
		out.Tiers = append(out.Tiers, TierInfo{Name: t.Name, Source: t.Source, TimeoutMS: t.Timeout.Milliseconds(), Model: t.Model,
			Models: t.Models})
	}
	for _, b := range st.Breakers {
		out.Breakers = append(out.Breakers, breakerInfo(b))
	}
	for _, c := range st.Caches {
		out.Caches = append(out.Caches, s.obs.caches.info(c))
	}
	return out
}

// tenantStatus serves GET /v1/status to a tenant.
func (s *Server) tenantStatus(c echo.Context) error {
	requested := c.Request().Header.Get(HeaderTenant)
	if requested == "" {
		requested = c.QueryParam("tenant_id")
	}
	tenant, err := resolveTenant(c, requested)
	if err != nil {
		return err
	}
	st := s.p.Status()
	out := TenantStatusResponse{Tenant: tenant, Tiers: make([]TierInfo, 0, len(st.Tiers)),
		Breakers: make([]BreakerState, 0, len(st.Breakers)), Caches: nonNil(s.p.TenantCaches(tenant))}
	for _, t := range st.Tiers {
		out.Tiers = append(out.Tiers, TierInfo{Name: t.Name, Source: t.Source, TimeoutMS: t.Timeout.Milliseconds(), Model: t.Model})
	}
	for _, b := range st.Breakers {
		bi := breakerInfo(b)
		out.Breakers = append(out.Breakers, BreakerState{Name: bi.Name, State: bi.State, OpenUntil: bi.OpenUntil})
	}
	return c.JSON(http.StatusOK, out)
}

// finiteRate returns rps, or 0 for NaN or ±Inf, which JSON cannot carry
// (config validation refuses them, but a pipeline built as a library
// skips it).
func finiteRate(rps float64) float64 {
	if math.IsNaN(rps) || math.IsInf(rps, 0) {
		return 0
	}
	return rps
}

func breakerInfo(b breaker.Snapshot) BreakerInfo {
	bi := BreakerInfo{Name: b.Name, State: b.State.String(), Calls: b.Calls, Failures: b.Failures,
		SlowCalls: b.SlowCalls, SlowInFlight: b.SlowInFlight, FailureRate: roundScore(b.FailureRate), ConsecutiveFailures: b.ConsecutiveFailures,
		ProbesInFlight: b.ProbesInFlight, Trips: b.Trips, Rejected: b.Rejected}
	if !b.OpenUntil.IsZero() {
		t := b.OpenUntil.UTC()
		bi.OpenUntil = &t
	}
	if lt := b.LastTrip; !lt.At.IsZero() {
		bi.LastTrip = &TripInfo{Cause: string(lt.Cause), Kind: lt.Kind, Message: lt.Message, At: lt.At.UTC()}
	}
	return bi
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// healthz serves GET /healthz: the process is alive.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz serves GET /readyz: ready when the pipeline is built and
// shutdown has not begun. A pipeline's knowledge base, if it has one, is
// loaded before the pipeline exists (pipeline.Status reports Loaded
// exactly when there is one), so a pipeline without one (a retrieval tier
// over the application's own retriever, or none) is ready too.
func (s *Server) readyz(c echo.Context) error {
	if s.draining.Load() {
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "shutting down")
	}
	kb := s.p.Status().KnowledgeBase
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "knowledge_base_version": kb.Version})
}

// reloadWait bounds how long POST /v1/admin/reload waits for the other
// instances of a cluster to report the reload.
const reloadWait = 2 * time.Second

// reloadResponse is the body of POST /v1/admin/reload.
type reloadResponse struct {
	Reloaded bool `json:"reloaded"`
	pipeline.ClusterReload
}

// reload serves POST /v1/admin/reload: reread the knowledge base here
// and, in a cluster, on every instance, waiting up to reloadWait for
// them to report.
func (s *Server) reload(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), reloadWait)
	defer cancel()
	r, err := s.p.ReloadCluster(ctx)
	if err != nil {
		s.log.LogAttrs(c.Request().Context(), slog.LevelError, "knowledge base reload failed", slog.String("admin", adminName(c)),
			slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		if errors.Is(err, pipeline.ErrNoKnowledgeBase) {
			return newError(http.StatusConflict, CodeReloadFailed, "this server has no knowledge base to reload")
		}
		return newError(http.StatusInternalServerError, CodeReloadFailed, "reload failed; the previous knowledge base stays in use")
	}
	s.log.Info("knowledge base reloaded", "admin", adminName(c), "request_id", requestID(c), "version", r.Version,
		"reload_id", r.ID, "instances", len(r.Members), "complete", r.Complete)
	return c.JSON(http.StatusOK, reloadResponse{Reloaded: true, ClusterReload: r})
}

// breakerRequest is the body of POST /v1/admin/breakers/{trip,reset}.
type breakerRequest struct {
	Breaker string `json:"breaker"` // e.g. "tier/retrieval" or "model/qwen3-max"; "*": every one (reset only)
}

// allBreakers names every breaker in a reset.
const allBreakers = "*"

// breakerFromBody finds the breaker a request names.
func (s *Server) breakerFromBody(c echo.Context) (*breaker.Breaker, error) {
	bs, _, err := s.breakersFromBody(c, false)
	if err != nil {
		return nil, err
	}
	return bs[0], nil
}

// breakersFromBody finds the breakers a request names: one, or, when all
// is set and it names "*", every one (every is then true).
func (s *Server) breakersFromBody(c echo.Context, all bool) (bs []*breaker.Breaker, every bool, err error) {
	body, err := readJSONBody(c.Request(), s.lim)
	if err != nil {
		return nil, false, err
	}
	var req breakerRequest
	if err := decodeStrict(body, &req, true); err != nil {
		return nil, false, err
	}
	if all && req.Breaker == allBreakers {
		for _, snap := range s.p.Breakers().Snapshots() {
			if b, ok := s.p.Breakers().Lookup(snap.Name); ok {
				bs = append(bs, b)
			}
		}
		return bs, true, nil
	}
	b, ok := s.p.Breakers().Lookup(req.Breaker)
	if !ok {
		return nil, false, newError(http.StatusNotFound, CodeNotFound, "no such breaker; GET /v1/status lists them")
	}
	return []*breaker.Breaker{b}, false, nil
}

// tripBreaker serves POST /v1/admin/breakers/trip: force a breaker open
// for its open duration, taking a tier or model out of the chain (after
// which it probes and recovers as usual). A static tier's breaker is
// refused (400 bad_request): that tier is the answer of last resort.
func (s *Server) tripBreaker(c echo.Context) error {
	b, err := s.breakerFromBody(c)
	if err != nil {
		return err
	}
	if s.guardsStaticTier(b.Name()) {
		return newError(http.StatusBadRequest, CodeBadRequest,
			"the static tier is the answer of last resort; its breaker cannot be tripped")
	}
	b.Trip()
	s.log.Warn("breaker tripped by request", "breaker", b.Name(), "admin", adminName(c), "request_id", requestID(c))
	return c.JSON(http.StatusOK, breakerInfo(b.Snapshot()))
}

// guardsStaticTier reports whether name is the breaker of a static tier,
// which must stay in the chain so that a question always gets an answer.
func (s *Server) guardsStaticTier(name string) bool {
	for _, t := range s.p.Status().Tiers {
		if t.Source == string(tiers.SourceStatic) && name == "tier/"+t.Name {
			return true
		}
	}
	return false
}

// resetBreaker serves POST /v1/admin/breakers/reset: force a breaker
// closed with an empty window; a model's breaker ("model/<id>") also ends
// that model's cooldown after a 429 on this instance. {"breaker": "*"}
// resets every breaker and answers {"breakers": [...]}.
func (s *Server) resetBreaker(c echo.Context) error {
	bs, every, err := s.breakersFromBody(c, true)
	if err != nil {
		return err
	}
	out := make([]BreakerInfo, 0, len(bs))
	for _, b := range bs {
		b.Reset()
		cooled := false
		if id, ok := strings.CutPrefix(b.Name(), "model/"); ok {
			cooled = s.p.EndCooldown(id)
		}
		s.log.Info("breaker reset by request", "breaker", b.Name(), "cooldown_ended", cooled, "admin", adminName(c),
			"request_id", requestID(c))
		out = append(out, breakerInfo(b.Snapshot()))
	}
	if !every {
		return c.JSON(http.StatusOK, out[0])
	}
	return c.JSON(http.StatusOK, map[string][]BreakerInfo{"breakers": out})
}
