package llmtest

import (
	"encoding/json"
	"net/http"
	"time"
)

// stream answers a streamed request as Server-Sent Events: one chunk per
// answer token (the last carries finish_reason), a usage chunk if asked,
// then "data: [DONE]". Break, stall and malformed act at chunk f.After,
// counted from 0; an After past the last chunk acts just before [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, f Fault, c completion) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	s.count(c.model, func(st *Stats) { st.PromptTokens += int64(c.prompt) })

	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		return writeEvent(w, rc, b)
	}
	if f.Mode == ModeEmpty {
		resp := chatResponse{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []chatChoice{}}
		if c.usage {
			resp.Usage = newUsage(c.prompt, 0)
		}
		if send(resp) {
			writeEvent(w, rc, []byte("[DONE]"))
		}
		return
	}

	at := min(f.After, len(c.pieces)) // where break, stall and malformed act
	for i := 0; i <= len(c.pieces); i++ {
		if !s.beforeChunk(w, rc, r, f, c, i, at) {
			return
		}
		if i == len(c.pieces) {
			break
		}
		delta := &chatMessageOut{Content: c.pieces[i]}
		if i == 0 {
			delta.Role = "assistant"
		}
		var finish *string
		if i == len(c.pieces)-1 {
			finish = &c.finish
		}
		chunk := chatResponse{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chatChoice{{Delta: delta, FinishReason: finish}}}
		if !send(chunk) {
			return
		}
		s.count(c.model, func(st *Stats) { st.Chunks++; st.CompletionTokens++ })
	}
	if c.usage {
		resp := chatResponse{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chatChoice{}, Usage: newUsage(c.prompt, len(c.pieces))}
		if !send(resp) {
			return
		}
	}
	writeEvent(w, rc, []byte("[DONE]"))
}

// beforeChunk applies the fault f of stream c before its chunk i (i is
// len(c.pieces) before the usage chunk and [DONE]); at is where break,
// stall and malformed act. It pauses as the fault or Config.ChunkDelay
// says, and reports false when the stream ends there.
func (s *Server) beforeChunk(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, f Fault, c completion, i, at int) bool {
	pause := time.Duration(-1) // -1: no pause; 0 with stall: forever
	if i > 0 && s.opts.ChunkDelay > 0 {
		pause = s.opts.ChunkDelay
	}
	switch f.Mode {
	case ModeStall:
		if i >= at {
			pause = f.Delay
		}
	case ModeBreak:
		if i == at {
			s.holdBreak(r.Context())
			abort(w, false)
			return false
		}
	case ModeMalformed:
		if i == at {
			if writeEvent(w, rc, []byte(`{"id": "`+c.id+`", "choices": [{"delta": {"content": oops`)) {
				writeEvent(w, rc, []byte("[DONE]"))
			}
			return false
		}
	}
	if pause >= 0 && !s.wait(r.Context(), pause) {
		abort(w, false)
		return false
	}
	return true
}

// writeEvent writes one SSE data line and flushes it. It returns false
// when the client is gone.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, data []byte) bool {
	buf := make([]byte, 0, len(data)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return false
	}
	return rc.Flush() == nil
}
