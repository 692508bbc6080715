package refagent

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/audio"
)

var (
	recOnce sync.Once
	rec     *asr.Recognizer
	recErr  error
)

// TestMain shares one recognizer between the tests (servers given a Recognizer do not close it).
func TestMain(m *testing.M) {
	code := m.Run()
	if rec != nil {
		rec.Close()
	}
	os.Exit(code)
}

func needTools(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("flite"); err != nil {
		tb.Skip("flite not installed (scripts/deps.sh installs it)")
	}
}

func sharedRecognizer(tb testing.TB) *asr.Recognizer {
	tb.Helper()
	recOnce.Do(func() { rec, recErr = asr.New(asr.Config{Decoders: 2}) })
	if recErr != nil {
		tb.Fatalf("recognizer: %v", recErr)
	}
	return rec
}

// startServer runs a reference agent on loopback for one test.
func startServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	needTools(tb)
	if cfg.Recognizer == nil {
		cfg.Recognizer = sharedRecognizer(tb)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return s
}

var fliteMemo sync.Map

// say renders a caller's words with a Flite caller voice at 24 kHz, with 0.6 s of trailing
// silence (what a caller's turn sounds like before the endpointer ends it).
func say(tb testing.TB, voice, text string) []int16 {
	tb.Helper()
	if v, ok := fliteMemo.Load(voice + "|" + text); ok {
		return v.([]int16)
	}
	out, err := exec.Command("flite", "-voice", voice, "-t", text, "-o", "/dev/stdout").Output()
	if err != nil {
		tb.Fatalf("flite: %v", err)
	}
	pcm := make([]int16, (len(out)-44)/2)
	binary.Read(bytes.NewReader(out[44:]), binary.LittleEndian, pcm)
	rs, err := audio.NewResampler(16000, 24000)
	if err != nil {
		tb.Fatal(err)
	}
	up := rs.Process(append(pcm, make([]int16, 16000*6/10)...), nil)
	fliteMemo.Store(voice+"|"+text, up)
	return up
}

// testTools is a small intake desk: a record tool, a transition and a gated commit.
var testTools = []agent.Tool{
	{Name: "record_ticket", Description: "Record fields of the support ticket.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"employee_id":{"type":"string"},"callback_phone":{"type":"string"}},"additionalProperties":false}`)},
	{Name: "mark_ready", Description: "Mark the ticket complete and ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

const testInstructions = "You are the Contoso help desk. Record the caller's employee ID and callback number with record_ticket and mark the ticket ready."

// dial connects the OpenAI GA adapter to s, as a session would.
func dial(tb testing.TB, s *Server, serverVAD bool) *openai.Adapter {
	tb.Helper()
	a := openai.New(openai.Options{URL: s.URL(), Model: "reference", Dialect: openai.GA})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, agent.Config{Instructions: testInstructions, Tools: testTools, Voice: "marin", ServerTurnDetection: serverVAD}); err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

// callerTurn sends one caller turn the way the session's matched turn-taking does: StartTurn, the audio
// in 40 ms frames, EndTurn (commit + response.create).
func callerTurn(tb testing.TB, a agent.Adapter, pcm []int16) {
	tb.Helper()
	if err := a.StartTurn(); err != nil {
		tb.Fatal(err)
	}
	for off := 0; off < len(pcm); off += 960 {
		if err := a.SendAudio(pcm[off:min(off+960, len(pcm))]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := a.EndTurn(); err != nil {
		tb.Fatal(err)
	}
}

// collected is what an agent did until its response ended.
type collected struct {
	transcript string
	caller     string
	calls      []agent.Event
	audio      int
	status     string
	raw        []string
}

// until collects events until a response ends with speech (or tool calls when calls is true),
// answering tool calls with result.
func until(tb testing.TB, a agent.Adapter, wantSpeech bool, result func(agent.Event) json.RawMessage) collected {
	tb.Helper()
	var c collected
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-a.Events():
			if !ok {
				tb.Fatalf("events closed; so far %+v", c)
			}
			if ev.RawType != "" && !ev.Outbound {
				c.raw = append(c.raw, ev.RawType)
			}
			switch ev.Type {
			case agent.EventCallerTranscript:
				c.caller = ev.Text
			case agent.EventAudioDelta:
				c.audio += len(ev.Audio)
			case agent.EventTranscriptDone:
				c.transcript = ev.Text
			case agent.EventToolCall:
				c.calls = append(c.calls, ev)
				out := json.RawMessage(`{"ok":true}`)
				if result != nil {
					out = result(ev)
				}
				if err := a.SendToolResult(ev.CallID, ev.Name, out); err != nil {
					tb.Fatal(err)
				}
			case agent.EventError:
				tb.Fatalf("agent error: %+v", ev.Err)
			case agent.EventResponseDone:
				c.status = ev.Status
				if !wantSpeech || c.audio > 0 || ev.Status != agent.StatusCompleted {
					return c
				}
			}
		case <-deadline:
			tb.Fatalf("no response within 30 s; so far %+v", c)
		}
	}
}
