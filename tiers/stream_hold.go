package tiers

import (
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// received is one result of ChatCompletionStream.Recv.
type received struct {
	resp openai.ChatCompletionStreamResponse
	err  error
}

// heldReader reads a stream whose text is held back for a time
// (StreamRequest.CommitAfterDuration). Recv runs on a goroutine of its
// own, so that the call's goroutine can commit the held text when the
// time is up even while no chunk comes; Emit thus stays on the call's
// goroutine. stop ends the goroutine and waits for it.
type heldReader struct {
	stream *openai.ChatCompletionStream
	s      *streamState
	out    chan received
	quit   chan struct{} // closed by stop
	done   chan struct{} // closed when the reading goroutine returns

	// timer runs from the first text; nil before. expired is its channel
	// until it fires, then nil.
	timer   *time.Timer
	expired <-chan time.Time
}

func startHeldReader(stream *openai.ChatCompletionStream, s *streamState) *heldReader {
	rd := &heldReader{stream: stream, s: s, out: make(chan received),
		quit: make(chan struct{}), done: make(chan struct{})}
	go rd.read()
	return rd
}

// read hands each chunk to next, until the stream ends or stop is called.
func (rd *heldReader) read() {
	defer close(rd.done)
	for {
		resp, err := rd.stream.Recv()
		select {
		case rd.out <- received{resp, err}:
		case <-rd.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// hold starts the hold timer at the first text; later calls do nothing.
func (rd *heldReader) hold(d time.Duration) {
	if rd.timer != nil || rd.s.committed {
		return
	}
	rd.timer = time.NewTimer(d)
	rd.expired = rd.timer.C
}

// next returns the next chunk like Recv. When the hold time ends while it
// waits, it commits the held text first; an error of Emit then ends the
// stream.
func (rd *heldReader) next() (openai.ChatCompletionStreamResponse, error) {
	for {
		select {
		case r := <-rd.out:
			return r.resp, r.err
		case <-rd.expired:
			rd.expired = nil
			rd.s.due = true
			if !rd.s.committed && rd.s.ready() {
				if err := rd.s.flush(); err != nil {
					return openai.ChatCompletionStreamResponse{}, err
				}
			}
		}
	}
}

// stop ends the reading goroutine (closing the stream unblocks a Recv in
// progress) and waits for it.
func (rd *heldReader) stop() {
	close(rd.quit)
	_ = rd.stream.Close()
	<-rd.done
	if rd.timer != nil {
		rd.timer.Stop()
	}
}
