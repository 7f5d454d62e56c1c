package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/ragfuse/ragfuse/tiers/llmtest"
)

// demoFaultsBody is the body of GET /v1/demo/faults.
type demoFaultsBody struct {
	Faults map[string]llmtest.Fault `json:"faults"` // by model: the fault in force
	Modes  []llmtest.Mode           `json:"modes"`  // the modes PUT accepts
}

// demoFaultBody is the body of the single-model demo routes.
type demoFaultBody struct {
	Model string        `json:"model"`
	Fault llmtest.Fault `json:"fault"`
}

// demoModel returns the :model parameter if it is a known demo model.
func (s *Server) demoModel(c echo.Context) (string, error) {
	m := c.Param("model")
	if m == llmtest.AnyModel || slices.Contains(s.models, m) {
		return m, nil
	}
	return "", newError(http.StatusNotFound, CodeNotFound, "no such demo model; GET /v1/demo/faults lists them")
}

// demoFaults serves GET /v1/demo/faults: the fault in force per model.
func (s *Server) demoFaults(c echo.Context) error {
	out := demoFaultsBody{Faults: map[string]llmtest.Fault{}, Modes: llmtest.Modes}
	for _, m := range s.models {
		out.Faults[m] = s.demo.Fault(m)
	}
	return c.JSON(http.StatusOK, out)
}

// demoFault serves GET /v1/demo/faults/:model.
func (s *Server) demoFault(c echo.Context) error {
	m, err := s.demoModel(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, demoFaultBody{Model: m, Fault: s.demo.Fault(m)})
}

// demoSetFault serves PUT /v1/demo/faults/:model with a fault such as
// {"mode": "hang"} or {"mode": "status", "status": 503}.
func (s *Server) demoSetFault(c echo.Context) error {
	m, err := s.demoModel(c)
	if err != nil {
		return err
	}
	body, err := readJSONBody(c.Request(), s.lim)
	if err != nil {
		return err
	}
	if err := unitlessDuration(body); err != nil {
		return err
	}
	var f llmtest.Fault
	if err := decodeStrict(body, &f, false); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return newError(http.StatusBadRequest, CodeBadFault, err.Error())
	}
	s.demo.SetFault(m, f)
	s.log.Info("demo fault set", "model", m, "mode", string(s.demo.Fault(m).Mode), "request_id", requestID(c))
	return c.JSON(http.StatusOK, demoFaultBody{Model: m, Fault: s.demo.Fault(m)})
}

// demoClearFault serves DELETE /v1/demo/faults/:model.
func (s *Server) demoClearFault(c echo.Context) error {
	m, err := s.demoModel(c)
	if err != nil {
		return err
	}
	s.demo.ClearFault(m)
	s.log.Info("demo fault cleared", "model", m, "request_id", requestID(c))
	return c.JSON(http.StatusOK, demoFaultBody{Model: m, Fault: s.demo.Fault(m)})
}

// demoClearFaults serves DELETE /v1/demo/faults: every model answers
// normally again.
func (s *Server) demoClearFaults(c echo.Context) error {
	s.demo.ClearFaults()
	s.log.Info("demo faults cleared", "request_id", requestID(c))
	return s.demoFaults(c)
}

// unitlessDuration refuses a fault whose delay or retry_after is a bare
// number: llmtest would read 5 as 5ns, where a person means 5s. Durations
// are strings such as "2s", as in the configuration.
func unitlessDuration(body []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // decodeStrict reports it
	}
	for _, name := range []string{"delay", "retry_after"} {
		if v := bytes.TrimSpace(fields[name]); len(v) > 0 && v[0] != '"' && !bytes.Equal(v, []byte("null")) {
			return newError(http.StatusBadRequest, CodeBadFault, name+": want a duration string such as \"2s\"")
		}
	}
	return nil
}
