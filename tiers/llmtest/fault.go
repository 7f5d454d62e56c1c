package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Mode names how the server answers a request for a model.
type Mode string

// The fault modes. The zero Mode ("") behaves like ModeOK.
const (
	// ModeOK answers normally.
	ModeOK Mode = "ok"
	// ModeLatency waits Delay, then answers normally (plain and stream).
	ModeLatency Mode = "latency"
	// ModeHang accepts the request and never answers, until the client
	// goes away or the server is closed.
	ModeHang Mode = "hang"
	// ModeStatus replies with HTTP Status (default 500) and Body (default:
	// an OpenAI-style error JSON matching the status).
	ModeStatus Mode = "status"
	// ModeRateLimit replies 429 with a Retry-After header of RetryAfter in
	// whole seconds (at least 1) and an OpenAI-style error body.
	ModeRateLimit Mode = "rate_limit"
	// ModeReset closes the TCP connection without any response, as an RST
	// where the connection allows it.
	ModeReset Mode = "reset"
	// ModeBreak sends After stream chunks, then cuts the connection without
	// [DONE]; a plain request is cut right after the response headers.
	ModeBreak Mode = "break"
	// ModeStall sends After stream chunks, then waits Delay before each
	// further chunk, or forever if Delay is zero. A plain request waits
	// Delay before answering, or forever if Delay is zero.
	ModeStall Mode = "stall"
	// ModeMalformed replies 200 with a body that is not valid JSON; a
	// stream sends After good chunks, then one that is not JSON.
	ModeMalformed Mode = "malformed"
	// ModeEmpty replies 200 with no choices (plain and stream).
	ModeEmpty Mode = "empty"
)

// Modes lists every mode, in declaration order.
var Modes = []Mode{ModeOK, ModeLatency, ModeHang, ModeStatus, ModeRateLimit,
	ModeReset, ModeBreak, ModeStall, ModeMalformed, ModeEmpty}

// Fault describes how the server answers the requests for one model. The
// zero Fault answers normally. In JSON, Delay and RetryAfter are written as
// duration strings ("1.5s") and read from such strings or from integer
// nanoseconds. A Fault is a plain value, safe to copy and share.
type Fault struct {
	Mode       Mode          `json:"mode"`
	Delay      time.Duration `json:"delay,omitempty"`       // latency, stall
	Status     int           `json:"status,omitempty"`      // status: the HTTP status; 0 means 500
	Body       string        `json:"body,omitempty"`        // status, rate_limit: the response body; "" means an OpenAI-style error
	RetryAfter time.Duration `json:"retry_after,omitempty"` // rate_limit: rounded up to whole seconds, at least 1s
	After      int           `json:"after,omitempty"`       // break, stall, malformed: good chunks sent first
}

// ErrBadFault reports a Fault or schedule that cannot be served.
var ErrBadFault = errors.New("llmtest: bad fault")

// Validate reports whether f can be served: a known mode, no negative
// durations or counts, and a status in 200..599 when set.
func (f Fault) Validate() error {
	switch {
	case f.Mode != "" && !slices.Contains(Modes, f.Mode):
		return fmt.Errorf("%w: unknown mode %q", ErrBadFault, f.Mode)
	case f.Delay < 0:
		return fmt.Errorf("%w: negative delay", ErrBadFault)
	case f.RetryAfter < 0:
		return fmt.Errorf("%w: negative retry_after", ErrBadFault)
	case f.After < 0:
		return fmt.Errorf("%w: negative after", ErrBadFault)
	case f.Status != 0 && (f.Status < 200 || f.Status > 599):
		return fmt.Errorf("%w: status %d out of range", ErrBadFault, f.Status)
	}
	return nil
}

// normalized returns f with the zero Mode replaced by ModeOK.
func (f Fault) normalized() Fault {
	if f.Mode == "" {
		f.Mode = ModeOK
	}
	return f
}

// Step is one step of a schedule: from At after the schedule's start, the
// step's Fault is in force until the next step's At. A Step is a plain
// value, safe to copy and share.
type Step struct {
	At time.Duration `json:"at"`
	Fault
}

// jsonDuration is a time.Duration written as "1.5s" and read from such a
// string or from integer nanoseconds.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = jsonDuration(v)
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"2s\" or integer nanoseconds", b)
	}
	*d = jsonDuration(v)
	return nil
}

// faultJSON is the wire form of Fault.
type faultJSON struct {
	Mode       Mode         `json:"mode"`
	Delay      jsonDuration `json:"delay,omitempty"`
	Status     int          `json:"status,omitempty"`
	Body       string       `json:"body,omitempty"`
	RetryAfter jsonDuration `json:"retry_after,omitempty"`
	After      int          `json:"after,omitempty"`
}

func (f Fault) wire() faultJSON {
	return faultJSON{f.Mode, jsonDuration(f.Delay), f.Status, f.Body, jsonDuration(f.RetryAfter), f.After}
}

func (w faultJSON) fault() Fault {
	return Fault{w.Mode, time.Duration(w.Delay), w.Status, w.Body, time.Duration(w.RetryAfter), w.After}
}

// MarshalJSON writes f with durations as strings.
func (f Fault) MarshalJSON() ([]byte, error) { return json.Marshal(f.wire()) }

// UnmarshalJSON reads f, accepting durations as strings or nanoseconds.
// Unknown fields are an error.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var w faultJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*f = w.fault()
	return nil
}

// stepJSON is the wire form of Step. Step needs its own methods: it would
// otherwise inherit Fault's and lose At.
type stepJSON struct {
	At jsonDuration `json:"at"`
	faultJSON
}

// MarshalJSON writes s with durations as strings.
func (s Step) MarshalJSON() ([]byte, error) {
	return json.Marshal(stepJSON{jsonDuration(s.At), s.Fault.wire()})
}

// UnmarshalJSON reads s, accepting durations as strings or nanoseconds.
// Unknown fields are an error.
func (s *Step) UnmarshalJSON(b []byte) error {
	var w stepJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*s = Step{At: time.Duration(w.At), Fault: w.faultJSON.fault()}
	return nil
}

// strictUnmarshal decodes b into v, rejecting unknown fields.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// schedule is a list of steps sorted by At, relative to start.
type schedule struct {
	start time.Time
	steps []Step
}

// at returns the fault in force at t: the last step with start+At <= t,
// or ModeOK before the first step.
func (sc schedule) at(t time.Time) Fault {
	f := Fault{Mode: ModeOK}
	for _, st := range sc.steps {
		if sc.start.Add(st.At).After(t) {
			break
		}
		f = st.Fault.normalized()
	}
	return f
}

// validateSteps checks every step of a schedule.
func validateSteps(steps []Step) error {
	for i, st := range steps {
		if st.At < 0 {
			return fmt.Errorf("%w: step %d: negative at", ErrBadFault, i)
		}
		if err := st.Fault.Validate(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}
