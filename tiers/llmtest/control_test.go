package llmtest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestStatsCounting(t *testing.T) {
	srv := start(t, Config{})
	c := client(t, srv)
	plain, err := c.CreateChatCompletion(t.Context(), chatReq("m", "Where is my parcel?"))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetFault("m", Fault{Mode: ModeBreak, After: 3})
	req := chatReq("m", "Where is my parcel?")
	req.Stream = true
	st, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(st); err == nil {
		t.Error("broken stream ended cleanly")
	}
	st.Close()
	srv.SetFault("m", Fault{Mode: ModeStatus, Status: 500})
	if _, err := c.CreateChatCompletion(t.Context(), chatReq("m", "hi")); err == nil {
		t.Error("status fault: no error")
	}
	if _, err := c.CreateEmbeddings(t.Context(), openai.EmbeddingRequest{Model: "e", Input: []string{"a b", "c"}}); err != nil {
		t.Fatal(err)
	}

	want := Stats{
		Calls: 3, StreamCalls: 1, Faulted: 2,
		PromptTokens:     2 * int64(plain.Usage.PromptTokens), // the 500 is not billed
		CompletionTokens: int64(plain.Usage.CompletionTokens) + 3,
		Chunks:           3,
	}
	if got := srv.Stats("m"); got != want {
		t.Errorf("Stats(m) = %+v, want %+v", got, want)
	}
	if got := srv.Stats("e"); got != (Stats{EmbeddingCalls: 1, PromptTokens: 3}) {
		t.Errorf("Stats(e) = %+v", got)
	}
	if all := srv.AllStats(); len(all) != 2 || all["m"] != want {
		t.Errorf("AllStats = %+v", all)
	}
	srv.ResetStats()
	if all := srv.AllStats(); len(all) != 0 {
		t.Errorf("after ResetStats: %+v", all)
	}
}

func TestControlAPI(t *testing.T) {
	clk := newManualClock()
	srv := start(t, Config{Clock: clk, Models: []string{"qwen3-max", "qwen-turbo", "org/model"}})
	base := root(srv) + "/_llmtest"

	status, _, body := raw(t, http.MethodPut, base+"/faults/qwen3-max", `{"mode":"latency","delay":"2s"}`)
	if status != 200 {
		t.Fatalf("PUT fault: %d %s", status, body)
	}
	if got := srv.Fault("qwen3-max"); got != (Fault{Mode: ModeLatency, Delay: 2 * time.Second}) {
		t.Errorf("fault set = %+v", got)
	}
	if status, _, body := raw(t, http.MethodPut, base+"/faults/org/model", `{"mode":"empty"}`); status != 200 {
		t.Errorf("model with a slash: %d %s", status, body)
	}
	if status, _, body := raw(t, http.MethodPut, base+"/faults/*", `{"mode":"hang"}`); status != 200 {
		t.Errorf("AnyModel: %d %s", status, body)
	}
	_, _, body = raw(t, http.MethodGet, base+"/faults", "")
	var faults map[string]Fault
	if err := json.Unmarshal([]byte(body), &faults); err != nil {
		t.Fatal(err)
	}
	if len(faults) != 3 || faults["qwen3-max"].Delay != 2*time.Second || faults["org/model"].Mode != ModeEmpty || faults[AnyModel].Mode != ModeHang {
		t.Errorf("GET faults = %s", body)
	}

	bad := []struct{ name, method, path, body string }{
		{"bad JSON", http.MethodPut, "/faults/qwen3-max", `{"mode":`},
		{"unknown mode", http.MethodPut, "/faults/qwen3-max", `{"mode":"explode"}`},
		{"unknown field", http.MethodPut, "/faults/qwen3-max", `{"mode":"latency","dleay":"1s"}`},
		{"bad duration", http.MethodPut, "/faults/qwen3-max", `{"mode":"latency","delay":"1 sec"}`},
		{"negative delay", http.MethodPut, "/faults/qwen3-max", `{"mode":"latency","delay":"-1s"}`},
		{"trailing data", http.MethodPut, "/faults/qwen3-max", `{"mode":"ok"} {}`},
		{"empty schedule", http.MethodPut, "/schedule/qwen3-max", `{"steps":[]}`},
		{"bad step", http.MethodPut, "/schedule/qwen3-max", `{"steps":[{"at":"-1s","mode":"ok"}]}`},
		{"unknown step field", http.MethodPut, "/schedule/qwen3-max", `{"steps":[{"at":"1s","mdoe":"ok"}]}`},
		{"no model", http.MethodPut, "/faults/", `{"mode":"ok"}`},
	}
	for _, tt := range bad {
		status, _, body := raw(t, tt.method, base+tt.path, tt.body)
		if status != 400 || errorCode(t, body) == "" {
			t.Errorf("%s: %d %s, want 400 with an error code", tt.name, status, body)
		}
	}
	if status, _, body := raw(t, http.MethodPut, base+"/faults/gpt-x", `{"mode":"ok"}`); status != 404 {
		t.Errorf("unknown model: %d %s", status, body)
	}
	if got := srv.Fault("qwen3-max").Mode; got != ModeLatency {
		t.Errorf("bad input changed the fault to %q", got)
	}

	status, _, body = raw(t, http.MethodPut, base+"/schedule/qwen-turbo",
		`{"steps":[{"at":"0s","mode":"status","status":503},{"at":"30s","mode":"ok"}]}`)
	if status != 200 {
		t.Fatalf("PUT schedule: %d %s", status, body)
	}
	if got := srv.Fault("qwen-turbo"); got.Mode != ModeStatus || got.Status != 503 {
		t.Errorf("scheduled fault now = %+v", got)
	}
	clk.Advance(30 * time.Second)
	if got := srv.Fault("qwen-turbo").Mode; got != ModeOK {
		t.Errorf("scheduled fault at 30s = %q", got)
	}

	if status, _, _ := raw(t, http.MethodDelete, base+"/faults/qwen3-max", ""); status != 204 {
		t.Errorf("DELETE fault: %d", status)
	}
	if got := srv.Fault("qwen3-max").Mode; got != ModeHang { // AnyModel remains
		t.Errorf("after DELETE: %q", got)
	}
	if status, _, _ := raw(t, http.MethodDelete, base+"/faults", ""); status != 204 {
		t.Errorf("DELETE faults: %d", status)
	}
	if _, _, body := raw(t, http.MethodGet, base+"/faults", ""); body != "{}\n" {
		t.Errorf("faults after DELETE all: %s", body)
	}

	if _, err := client(t, srv).CreateChatCompletion(t.Context(), chatReq("qwen3-max", "hi")); err != nil {
		t.Fatal(err)
	}
	_, _, body = raw(t, http.MethodGet, base+"/stats", "")
	var stats map[string]Stats
	if err := json.Unmarshal([]byte(body), &stats); err != nil || stats["qwen3-max"].Calls != 1 {
		t.Errorf("GET stats = %s, %v", body, err)
	}
	if status, _, _ := raw(t, http.MethodPost, base+"/stats/reset", ""); status != 204 || len(srv.AllStats()) != 0 {
		t.Errorf("stats reset: %d, %+v", status, srv.AllStats())
	}
}

func TestModels(t *testing.T) {
	srv := start(t, Config{Models: []string{"b", "a"}})
	c := client(t, srv)
	list, err := c.ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 2 || list.Models[0].ID != "b" || list.Models[1].ID != "a" {
		t.Errorf("models = %+v", list.Models)
	}
	if m, err := c.GetModel(t.Context(), "a"); err != nil || m.ID != "a" {
		t.Errorf("GetModel = %+v, %v", m, err)
	}
	if _, err := c.GetModel(t.Context(), "zzz"); err == nil {
		t.Error("GetModel of an unknown model succeeded")
	}

	open := start(t, Config{})
	open.SetFault("x", Fault{})
	list, err = client(t, open).ListModels(t.Context())
	if err != nil || len(list.Models) != 1 || list.Models[0].ID != "x" {
		t.Errorf("models without Config.Models = %+v, %v", list.Models, err)
	}
}

// TestControlRefusesTrailingBrackets: a control body with a stray ] or }
// after its object is refused as trailing data, like any other.
func TestControlRefusesTrailingBrackets(t *testing.T) {
	srv := start(t, Config{})
	for _, b := range []string{`{"mode":"hang"}}`, `{"mode":"hang"}]`, `{"mode":"hang"} x`} {
		if status, _, body := raw(t, http.MethodPut, root(srv)+"/_llmtest/faults/m", b); status != http.StatusBadRequest {
			t.Errorf("PUT fault %s: %d %s, want 400", b, status, body)
		}
	}
	if f := srv.Fault("m"); f.Mode != ModeOK {
		t.Errorf("fault %+v set by a refused body", f)
	}
}
