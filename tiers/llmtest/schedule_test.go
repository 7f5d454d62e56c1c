package llmtest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestScheduleFollowsClock(t *testing.T) {
	clk := newManualClock()
	srv := start(t, Config{Clock: clk})
	c := client(t, srv)
	start := clk.Now().Add(time.Second)
	// Unsorted on purpose.
	srv.Schedule("m", start, []Step{
		{At: 20 * time.Second, Fault: Fault{Mode: ModeRateLimit, RetryAfter: 3 * time.Second}},
		{At: 0, Fault: Fault{Mode: ModeStatus, Status: 503}},
		{At: 40 * time.Second, Fault: Fault{}},
	})
	steps := []struct {
		advance time.Duration
		mode    Mode
		status  int // 0: success
	}{
		{0, ModeOK, 0},                      // before the schedule starts
		{time.Second, ModeStatus, 503},      // at start+0
		{19 * time.Second, ModeStatus, 503}, // start+19s
		{time.Second, ModeRateLimit, 429},   // start+20s
		{19 * time.Second, ModeRateLimit, 429},
		{time.Second, ModeOK, 0}, // start+40s: the zero Fault means ok
		{time.Hour, ModeOK, 0},   // the last step stays in force
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := srv.Fault("m").Mode; got != st.mode {
			t.Errorf("step %d: Fault = %q, want %q", i, got, st.mode)
		}
		_, err := c.CreateChatCompletion(t.Context(), chatReq("m", "hi"))
		var e *openai.APIError
		switch {
		case st.status == 0 && err != nil:
			t.Errorf("step %d: %v, want success", i, err)
		case st.status != 0 && (!errors.As(err, &e) || e.HTTPStatusCode != st.status):
			t.Errorf("step %d: %v, want HTTP %d", i, err, st.status)
		}
	}
	srv.SetFault("m", Fault{Mode: ModeEmpty})
	if got := srv.Fault("m").Mode; got != ModeEmpty {
		t.Errorf("SetFault after Schedule: %q, want it to replace the schedule", got)
	}
}

func TestAnyModel(t *testing.T) {
	clk := newManualClock()
	srv := start(t, Config{Clock: clk})
	srv.SetFault(AnyModel, Fault{Mode: ModeStatus, Status: 500})
	srv.SetFault("own", Fault{Mode: ModeEmpty})
	if got := srv.Fault("anything").Mode; got != ModeStatus {
		t.Errorf("AnyModel not applied: %q", got)
	}
	if got := srv.Fault("own").Mode; got != ModeEmpty {
		t.Errorf("own fault overridden by AnyModel: %q", got)
	}
	srv.Schedule(AnyModel, clk.Now(), []Step{{At: time.Minute, Fault: Fault{Mode: ModeHang}}})
	if got := srv.Fault("anything").Mode; got != ModeOK {
		t.Errorf("before the first step: %q, want ok", got)
	}
	clk.Advance(time.Minute)
	if got := srv.Fault("anything").Mode; got != ModeHang {
		t.Errorf("AnyModel schedule: %q", got)
	}
	srv.ClearFault("own")
	if got := srv.Fault("own").Mode; got != ModeHang {
		t.Errorf("after ClearFault: %q, want the AnyModel fault", got)
	}
	srv.ClearFaults()
	if got := srv.Fault("own"); got != (Fault{Mode: ModeOK}) {
		t.Errorf("after ClearFaults: %+v", got)
	}
}

func TestFaultJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Fault
		err  bool
	}{
		{`{"mode":"latency","delay":"1.5s"}`, Fault{Mode: ModeLatency, Delay: 1500 * time.Millisecond}, false},
		{`{"mode":"rate_limit","retry_after":2000000000}`, Fault{Mode: ModeRateLimit, RetryAfter: 2 * time.Second}, false},
		{`{"mode":"break","after":3}`, Fault{Mode: ModeBreak, After: 3}, false},
		{`{"mode":"latency","delay":"soon"}`, Fault{}, true},
		{`{"mode":"latency","delay":1.5}`, Fault{}, true},
		{`{"mode":"latency","delay":true}`, Fault{}, true},
		{`{"mode":"ok","extra":1}`, Fault{}, true},
	}
	for _, tt := range tests {
		var f Fault
		err := json.Unmarshal([]byte(tt.in), &f)
		if (err != nil) != tt.err || !tt.err && f != tt.want {
			t.Errorf("%s: got %+v, %v", tt.in, f, err)
		}
	}
	f := Fault{Mode: ModeStall, Delay: 250 * time.Millisecond, After: 2}
	b, err := json.Marshal(f)
	if err != nil || string(b) != `{"mode":"stall","delay":"250ms","after":2}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	steps := []Step{{At: 10 * time.Second, Fault: Fault{Mode: ModeStatus, Status: 503}}, {At: 0}}
	b, err = json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	var back []Step
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, steps) {
		t.Errorf("steps round trip: %s -> %+v, %v", b, back, err)
	}
}

func TestFaultValidate(t *testing.T) {
	for _, f := range []Fault{{}, {Mode: ModeOK}, {Mode: ModeStatus, Status: 503}, {Mode: ModeStall, Delay: time.Second, After: 3}} {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	for _, f := range []Fault{{Mode: "explode"}, {Mode: ModeLatency, Delay: -1}, {Mode: ModeRateLimit, RetryAfter: -1},
		{Mode: ModeBreak, After: -1}, {Mode: ModeStatus, Status: 99}, {Mode: ModeStatus, Status: 600}} {
		if err := f.Validate(); !errors.Is(err, ErrBadFault) {
			t.Errorf("%+v: %v, want ErrBadFault", f, err)
		}
	}
}

// TestUnknownModeServes500 guards against a fault set in code with a mode
// the server does not know.
func TestUnknownModeServes500(t *testing.T) {
	srv := start(t, Config{})
	srv.SetFault("m", Fault{Mode: "explode"})
	_, err := client(t, srv).CreateChatCompletion(t.Context(), chatReq("m", "hi"))
	var e *openai.APIError
	if !errors.As(err, &e) || e.HTTPStatusCode != 500 || e.Code != "unknown_fault" {
		t.Errorf("got %v", err)
	}
}
