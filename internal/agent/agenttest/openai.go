package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
)

// Script drives a fake: replies in order, one per response the fake starts.
type Script struct {
	Replies []Reply
	// CallerTranscripts are reported, in order, for committed caller turns when the session asked
	// for input transcription.
	CallerTranscripts []string
	// Key, when set, is the only bearer key (OpenAI family) or x-goog-api-key (Gemini) accepted.
	Key string
	// EchoKey quotes a refused key in the HTTP 401 body (OpenAI family), as a hostile or careless
	// provider would.
	EchoKey bool
	// SplitToolTurns (Gemini) ends a tool-call turn with turnComplete and answers the tool
	// results in a new turn, as some Gemini Live models do (livekit/agents PR #3192), instead of
	// continuing the same turn after the toolResponse and ending it with one turnComplete.
	SplitToolTurns bool
}

// Received is one client message as the fake got it (audio replaced by its byte count).
type Received struct {
	Conn int
	Type string
	Raw  json.RawMessage
}

// Handshake is what a client's upgrade request carried.
type Handshake struct {
	Path, Model string
	BetaHeader  string
	Auth        bool // an Authorization (or API key) header was present
}

// OpenAIFake is a loopback OpenAI-family realtime server: the realtime server of the family
// configured as provider p, answering from a script.
type OpenAIFake struct {
	traffic
	script     cursor
	errorsSent []wire.ErrorDetail
	rt         *realtimeserver.Server
	srv        *httptest.Server
}

// NewOpenAIFake starts a fake for provider p on loopback; it is closed when tb ends.
func NewOpenAIFake(tb testing.TB, p Provider, s Script) *OpenAIFake {
	tb.Helper()
	f := &OpenAIFake{traffic: traffic{audioType: wire.InputAudioAppend}, script: cursor{s: s}}
	f.rt = realtimeserver.New(realtimeserver.Config{Name: "fake " + p.Name, Provider: p, Responder: openaiResponder{f},
		Key: s.Key, EchoRefusedKey: s.EchoKey, VAD: newEnergyVAD, IDPrefix: "c", Observer: openaiObserver{f}})
	f.srv = httptest.NewServer(f.rt.Handler())
	tb.Cleanup(f.Close)
	return f
}

// URL is the ws:// endpoint (path /v1/realtime).
func (f *OpenAIFake) URL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + realtimeserver.Path
}

// Close drops every connection and stops the server.
func (f *OpenAIFake) Close() {
	f.rt.Close()
	f.srv.Close()
}

// DropAll closes every connection's TCP socket without a close frame.
func (f *OpenAIFake) DropAll() { f.rt.DropAll() }

// ErrorsSent returns the error events the fake sent, in order.
func (f *OpenAIFake) ErrorsSent() []wire.ErrorDetail { return snapshot(&f.mu, &f.errorsSent) }

// ErrorCodes returns the codes of ErrorsSent.
func (f *OpenAIFake) ErrorCodes() []string {
	var out []string
	for _, e := range f.ErrorsSent() {
		out = append(out, e.Code)
	}
	return out
}

// openaiObserver records the fake's traffic.
type openaiObserver struct{ f *OpenAIFake }

func (o openaiObserver) Upgrade(r *http.Request) {
	hs := Handshake{Path: r.URL.Path, Model: r.URL.Query().Get("model"), BetaHeader: r.Header.Get("OpenAI-Beta"),
		Auth: r.Header.Get("Authorization") != ""}
	o.f.upgrade(hs)
}

func (o openaiObserver) Received(conn int, typ string, data []byte) {
	audio := ""
	if typ == wire.InputAudioAppend || typ == wire.ItemCreate {
		audio = "audio"
	}
	o.f.receive(conn, typ, data, audio)
}

func (o openaiObserver) Sent(_ int, ev *wire.ServerEvent) {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	o.f.sent = append(o.f.sent, ev.Type)
	if ev.Type == wire.Error && ev.Error != nil {
		o.f.errorsSent = append(o.f.errorsSent, *ev.Error)
	}
}

func (o openaiObserver) Misuse(_ int, what string) { o.f.violation("%s", what) }

// openaiResponder gives each connection a scripted agent.
type openaiResponder struct{ f *OpenAIFake }

func (r openaiResponder) Open(c *realtimeserver.Conn) realtimeserver.Agent {
	return &openaiAgent{f: r.f, c: c}
}

// openaiAgent is one connection's scripted agent: each response plays the script's next reply.
type openaiAgent struct {
	f *OpenAIFake
	c *realtimeserver.Conn

	mu         sync.Mutex
	transcribe bool
	admitted   []Reply // replies of the response.creates admitted, for their responses in order
}

var (
	_ realtimeserver.Agent    = (*openaiAgent)(nil)
	_ realtimeserver.Admitter = (*openaiAgent)(nil)
)

func (a *openaiAgent) Configure(s realtimeserver.Session) {
	a.mu.Lock()
	a.transcribe = s.Transcription
	a.mu.Unlock()
}

// Commit reports the script's next caller transcript for committed audio, when asked to.
func (a *openaiAgent) Commit(t realtimeserver.Turn) {
	a.mu.Lock()
	transcribe := a.transcribe
	a.mu.Unlock()
	if transcribe && !t.Message {
		ms := len(t.PCM) * 1000 / wire.SampleRate
		a.c.Transcript(t.ItemID, a.f.script.callerTranscript(fmt.Sprintf("(caller audio %d ms)", ms)))
	}
}

// Admit takes the script's next reply for a response.create: a Hang reply goes unanswered, an
// Error reply is answered with that error instead of a response, a CloseCode reply closes the
// connection (as a provider does for a revoked key or an exhausted quota).
func (a *openaiAgent) Admit(string) *realtimeserver.Refusal {
	reply := a.f.script.reply()
	switch {
	case reply.Hang:
		return &realtimeserver.Refusal{}
	case reply.Error != nil:
		return &realtimeserver.Refusal{Error: &wire.ErrorDetail{Type: reply.Error.Type, Code: reply.Error.Code, Message: reply.Error.Message}}
	case reply.CloseCode != 0:
		a.c.CloseWith(reply.CloseCode, reply.CloseReason)
		return &realtimeserver.Refusal{}
	}
	a.mu.Lock()
	a.admitted = append(a.admitted, reply)
	a.mu.Unlock()
	return nil
}

func (a *openaiAgent) Respond(r *realtimeserver.Response) realtimeserver.Outcome {
	var reply Reply
	a.mu.Lock()
	if !r.Auto() && len(a.admitted) > 0 {
		reply, a.admitted = a.admitted[0], a.admitted[1:]
		a.mu.Unlock()
	} else {
		a.mu.Unlock()
		reply = a.f.script.reply()
	}
	status, reason := play(r, reply)
	if status == "" {
		return realtimeserver.Outcome{} // dropped
	}
	out := realtimeserver.Outcome{Status: status, Reason: reason}
	if reply.Fail != nil && status == agent.StatusFailed {
		out.Failure = &wire.ErrorDetail{Type: reply.Fail.Type, Code: reply.Fail.Code, Message: reply.Fail.Message}
	}
	audioTokens := r.AudioMS() / 50
	out.Usage = &wire.Usage{InputTokens: 120, OutputTokens: 20 + audioTokens, TotalTokens: 140 + audioTokens,
		InputTokenDetails:  &wire.TokenDetails{TextTokens: 100, AudioTokens: 20},
		OutputTokenDetails: &wire.TokenDetails{TextTokens: 20, AudioTokens: audioTokens}}
	return out
}

func (a *openaiAgent) Close() {}

// play produces one reply; it returns the final status and reason, or "" when the connection
// was dropped.
func play(r *realtimeserver.Response, reply Reply) (status, reason string) {
	if reply.Fail != nil {
		return agent.StatusFailed, ""
	}
	if reply.Latency > 0 {
		timer := time.NewTimer(reply.Latency)
		select {
		case <-r.Cancelled():
			timer.Stop()
			return agent.StatusCancelled, r.Reason()
		case <-timer.C:
		}
	}
	if reply.Drop && reply.DropAfter == 0 {
		r.Drop()
		return "", ""
	}
	chunkMS := reply.chunkMS()
	if n := (reply.audioMS() + chunkMS - 1) / chunkMS; n > 0 {
		if _, err := r.BeginAudio(); err != nil {
			return "", ""
		}
		_, end := reply.play(r.Cancelled(), func() int { return wire.SampleRate }, func(ch chunk) bool {
			if r.Audio(ch.pcm) != nil {
				return false
			}
			if ch.text != "" {
				r.Transcript(ch.text)
			}
			if reply.Drop && ch.i+1 == reply.DropAfter {
				r.Drop()
				return false
			}
			return true
		})
		switch end {
		case playCancelled:
			return agent.StatusCancelled, r.Reason()
		case playStopped:
			return "", ""
		}
	}
	select {
	case <-r.Cancelled():
		return agent.StatusCancelled, r.Reason()
	default:
	}
	for _, call := range reply.Calls {
		if _, err := r.Call(call.Name, call.Arguments); err != nil {
			return "", ""
		}
	}
	return agent.StatusCompleted, ""
}
