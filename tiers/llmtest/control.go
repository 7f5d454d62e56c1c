package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// The control API, for tools that drive a running server:
//
//	GET    /_llmtest/faults          model -> fault in force now
//	PUT    /_llmtest/faults/{model}  body: a Fault
//	DELETE /_llmtest/faults/{model}  clear one model's fault or schedule
//	DELETE /_llmtest/faults          clear every fault and schedule
//	PUT    /_llmtest/schedule/{model} body: {"steps": [Step...]}, starting now
//	GET    /_llmtest/stats           model -> Stats
//	POST   /_llmtest/stats/reset     zero every counter

// ScheduleRequest is the body of PUT /_llmtest/schedule/{model}.
type ScheduleRequest struct {
	Steps []Step `json:"steps"`
}

// decodeStrict decodes one JSON value from the body, rejecting unknown
// fields and trailing data; it answers 400 itself on failure.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_body", "cannot read request body")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "invalid JSON body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "invalid JSON body: trailing data")
		return false
	}
	return true
}

// controlModel returns the {model} path value, answering 400 or 404 itself
// when it names no model that can be served.
func (s *Server) controlModel(w http.ResponseWriter, r *http.Request) (string, bool) {
	m := r.PathValue("model")
	if m == AnyModel {
		return m, true
	}
	return m, s.checkModel(w, m)
}

func (s *Server) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.faultsNow())
}

func (s *Server) handlePutFault(w http.ResponseWriter, r *http.Request) {
	m, ok := s.controlModel(w, r)
	if !ok {
		return
	}
	var f Fault
	if !decodeStrict(w, r, &f) {
		return
	}
	if err := f.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_fault", err.Error())
		return
	}
	s.SetFault(m, f)
	writeJSON(w, http.StatusOK, s.Fault(m))
}

func (s *Server) handleDeleteFault(w http.ResponseWriter, r *http.Request) {
	m, ok := s.controlModel(w, r)
	if !ok {
		return
	}
	s.ClearFault(m)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleDeleteFaults(w http.ResponseWriter, r *http.Request) {
	s.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handlePutSchedule(w http.ResponseWriter, r *http.Request) {
	m, ok := s.controlModel(w, r)
	if !ok {
		return
	}
	var req ScheduleRequest
	if !decodeStrict(w, r, &req) {
		return
	}
	if len(req.Steps) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_schedule", "steps must not be empty")
		return
	}
	if err := validateSteps(req.Steps); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_schedule", err.Error())
		return
	}
	s.Schedule(m, s.clock.Now(), req.Steps)
	writeJSON(w, http.StatusOK, s.Fault(m))
}

func (s *Server) handleGetStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.AllStats())
}

func (s *Server) handleResetStats(w http.ResponseWriter, r *http.Request) {
	s.ResetStats()
	w.WriteHeader(http.StatusNoContent)
}
