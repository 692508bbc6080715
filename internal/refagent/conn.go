package refagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/audio"
)

// gaVoices are the voice names a GA session accepts; the reference agent speaks each with its own
// Flite voice.
var gaVoices = []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"}

// settings is a connection's effective session configuration.
type settings struct {
	instructions      string
	tools             []wire.Tool
	toolChoice        json.RawMessage
	voice             string
	serverVAD         bool
	silenceMS         int
	prefixMS          int
	createResponse    bool
	interruptResponse bool
	transcription     json.RawMessage
	maxOutputTokens   json.RawMessage
}

// item is a conversation item the server keeps for truncate and delete.
type item struct {
	role    string
	typ     string
	samples int // assistant audio sent so far
}

// turn is one committed caller turn awaiting recognition.
type turn struct {
	itemID string
	pcm    []int16
	text   string // a text message instead of audio
	exp    expectation
	m      *model
	ear    *ear // the open-vocabulary stream of the turn, when one ran
	at     time.Time
	done   chan struct{}
	h      heard
}

// ear decodes a caller turn with the open-vocabulary model while it is spoken, so that only the
// turn's last moments remain to decode when it is committed.
type ear struct {
	stream *asr.Stream
	ch     chan []int16
	done   chan struct{}
	res    asr.Result
	err    error
	broken bool // audio was lost (the stream fell too far behind): decode the turn whole
}

// earQueue is how far (in 40 ms frames) a stream may fall behind the caller before it is given up.
const earQueue = 1500

// response is the response in progress.
type response struct {
	rw       *wire.ResponseWriter
	cancel   chan struct{}
	once     sync.Once
	reason   string
	auto     bool // created by server VAD
	turnsTo  int  // turns committed before it, which it answers
	outputTo int  // tool outputs received before it
}

func (r *response) stop(reason string) {
	r.once.Do(func() {
		r.reason = reason
		close(r.cancel)
	})
}

// toolOutput is a function_call_output the client sent.
type toolOutput struct {
	name, output string
}

// conn is one client connection: the reader goroutine handles client events in order, a
// responder goroutine produces responses one at a time, and each committed turn is recognized on
// its own goroutine so that recognition overlaps the agent's speech.
type conn struct {
	s     *Server
	id    int
	ws    *websocket.Conn
	log   *slog.Logger
	model string
	em    *wire.Emitter
	wmu   sync.Mutex
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	respQ chan *response
	lst   *listener

	mu       sync.Mutex
	set      settings
	mdl      *model
	pol      *policy
	spoke    bool // assistant audio sent: the voice is frozen
	buf      []int16
	total    int64 // caller samples appended since the connection opened
	vad      *audio.Endpointer
	vadItem  string
	vadStart int64        // sample where the current VAD turn starts
	ear      *ear         // the stream of the turn being spoken
	lastEar  *ear         // the previous turn's stream (the channel streams one turn at a time)
	channel  *asr.Channel // the caller's channel: a decoder of its own; nil: turns are decoded whole
	lastItem string
	items    map[string]*item
	calls    map[string]string // call id → tool name
	answered map[string]bool
	turns    []*turn
	consumed int // turns fed to the policy
	outputs  []toolOutput
	outUsed  int
	active   *response
	pendAuto bool // server VAD wants a response once the active one is done
}

func newConn(s *Server, id int, ws *websocket.Conn, model string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, id: id, ws: ws, model: model, ctx: ctx, stop: cancel,
		log:   s.log.With(slog.Int("conn", id)),
		respQ: make(chan *response, 4),
		lst:   &listener{rec: s.rec, now: s.cfg.Now},
		items: map[string]*item{}, calls: map[string]string{}, answered: map[string]bool{},
		set: settings{voice: "marin", serverVAD: true, silenceMS: 500, prefixMS: 300, createResponse: true,
			interruptResponse: true, toolChoice: json.RawMessage(`"auto"`)},
	}
	c.em = wire.NewEmitter(wire.SchemaGA, fmt.Sprintf("ref%d_", id), c.write)
	c.rebuildLocked()
	c.resetVADLocked()
	return c
}

func (c *conn) write(ev *wire.ServerEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		c.stop()
		return err
	}
	return nil
}

// drop closes the socket; serve then returns after releasing the connection's goroutines.
func (c *conn) drop() {
	c.stop()
	c.ws.Close()
}

func (c *conn) serve() {
	// The caller's channel gets a decoder of its own, so that streaming recognition of this call
	// depends on nothing but its own audio. Loading it takes a fraction of a second, before the
	// session starts.
	if ch, err := c.s.rec.OpenChannel(); err != nil {
		c.log.Warn("no streaming recognition for this call; turns are decoded when committed", slog.Any("err", err))
	} else {
		c.channel = ch
		defer ch.Close()
	}
	c.wg.Add(1)
	go c.respond()
	c.em.Send(&wire.ServerEvent{Type: wire.SessionCreated, Session: c.sessionJSON()})
	c.ws.SetPingHandler(func(data string) error {
		c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	for c.ctx.Err() == nil {
		c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			break
		}
		if typ != websocket.TextMessage {
			c.fail("", "invalid_request_error", "invalid_value", "Binary frames are not supported; send JSON text events.", "")
			continue
		}
		c.handle(data)
	}
	c.stop()
	c.ws.Close()
	c.mu.Lock()
	if c.active != nil {
		c.active.stop("connection closed")
	}
	c.closeEarLocked(true)
	c.mu.Unlock()
	c.wg.Wait()
}

// fail sends an error event for a client event.
func (c *conn) fail(eventID, typ, code, message, param string) {
	d := &wire.ErrorDetail{Type: typ, Code: code, Message: message}
	if param != "" {
		d.Param = wire.Str(param)
	}
	if eventID != "" {
		d.EventID = wire.Str(eventID)
	}
	c.em.Send(&wire.ServerEvent{Type: wire.Error, Error: d})
}

func (c *conn) invalid(eventID, code, message, param string) {
	c.fail(eventID, "invalid_request_error", code, message, param)
}

func (c *conn) handle(data []byte) {
	var ev wire.ClientEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		c.invalid("", "invalid_json", "We could not parse the JSON body of your request: "+err.Error(), "")
		return
	}
	switch ev.Type {
	case wire.SessionUpdate:
		c.sessionUpdate(&ev)
	case wire.InputAudioAppend:
		c.appendAudio(&ev)
	case wire.InputAudioCommit:
		c.commit(&ev)
	case wire.InputAudioClear:
		c.mu.Lock()
		c.buf = c.buf[:0]
		c.resetVADLocked()
		c.closeEarLocked(true)
		c.mu.Unlock()
		c.em.Send(&wire.ServerEvent{Type: wire.InputCleared})
	case wire.ItemCreate:
		c.itemCreate(&ev)
	case wire.ItemTruncate:
		c.truncate(&ev)
	case wire.ItemDelete:
		c.itemDelete(&ev)
	case wire.ResponseCreate:
		c.responseCreate(&ev)
	case wire.ResponseCancel:
		c.responseCancel(&ev)
	case "":
		c.invalid(ev.EventID, "missing_required_parameter", "Missing required parameter: 'type'.", "type")
	default:
		c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Unknown event type.", ev.Type), "type")
	}
}

// ---- session ----

// sessionKeys are the GA session parameters accepted; a nil subtree accepts any value.
type keyTree map[string]keyTree

var gaSessionKeys = keyTree{"type": nil, "model": nil, "output_modalities": nil, "instructions": nil, "tools": nil,
	"tool_choice": nil, "max_output_tokens": nil, "tracing": nil, "truncation": nil, "prompt": nil, "include": nil,
	"audio": {"input": {"format": nil, "turn_detection": {"type": nil, "threshold": nil, "prefix_padding_ms": nil,
		"silence_duration_ms": nil, "create_response": nil, "interrupt_response": nil, "eagerness": nil, "idle_timeout_ms": nil},
		"transcription": nil, "noise_reduction": nil}, "output": {"format": nil, "voice": nil, "speed": nil}}}

func unknownKey(path string, v map[string]json.RawMessage, tree keyTree) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sub, ok := tree[k]
		if !ok {
			return path + "." + k
		}
		if sub != nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(v[k], &m) == nil {
				if bad := unknownKey(path+"."+k, m, sub); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (c *conn) sessionUpdate(ev *wire.ClientEvent) {
	id := ev.EventID
	var top map[string]json.RawMessage
	if len(ev.Session) == 0 || json.Unmarshal(ev.Session, &top) != nil || top == nil {
		c.invalid(id, "missing_required_parameter", "Missing required parameter: 'session'.", "session")
		return
	}
	if bad := unknownKey("session", top, gaSessionKeys); bad != "" {
		c.invalid(id, wire.CodeUnknownParameter, fmt.Sprintf("Unknown parameter: '%s'.", bad), bad)
		return
	}
	var s struct {
		Type             *string         `json:"type"`
		OutputModalities []string        `json:"output_modalities"`
		Instructions     *string         `json:"instructions"`
		Tools            *[]wire.Tool    `json:"tools"`
		ToolChoice       json.RawMessage `json:"tool_choice"`
		MaxOutputTokens  json.RawMessage `json:"max_output_tokens"`
		Audio            *struct {
			Input *struct {
				Format        *wire.AudioFormat `json:"format"`
				TurnDetection json.RawMessage   `json:"turn_detection"`
				Transcription json.RawMessage   `json:"transcription"`
			} `json:"input"`
			Output *struct {
				Format *wire.AudioFormat `json:"format"`
				Voice  *string           `json:"voice"`
			} `json:"output"`
		} `json:"audio"`
	}
	if err := json.Unmarshal(ev.Session, &s); err != nil {
		c.invalid(id, "invalid_type", "Invalid session: "+err.Error(), "session")
		return
	}
	c.mu.Lock()
	next := c.set
	spoke := c.spoke
	c.mu.Unlock()
	switch {
	case s.Type == nil:
		c.invalid(id, "missing_required_parameter", "Missing required parameter: 'session.type'.", "session.type")
		return
	case *s.Type != "realtime":
		c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'realtime'.", *s.Type), "session.type")
		return
	}
	if s.OutputModalities != nil && !slices.Equal(s.OutputModalities, []string{"audio"}) {
		c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: %q. The reference agent supports output_modalities ['audio'].", s.OutputModalities),
			"session.output_modalities")
		return
	}
	if s.Instructions != nil {
		next.instructions = *s.Instructions
	}
	if s.Tools != nil {
		for i, t := range *s.Tools {
			p := fmt.Sprintf("session.tools[%d]", i)
			switch {
			case t.Type != "function":
				c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", t.Type), p+".type")
				return
			case t.Name == "":
				c.invalid(id, "missing_required_parameter", "Missing required parameter: '"+p+".name'.", p+".name")
				return
			}
			if len(t.Parameters) > 0 {
				var obj map[string]json.RawMessage
				if json.Unmarshal(t.Parameters, &obj) != nil {
					c.invalid(id, "invalid_type", "Invalid type for '"+p+".parameters': expected an object.", p+".parameters")
					return
				}
			}
		}
		next.tools = *s.Tools
	}
	if len(s.ToolChoice) > 0 {
		var str string
		if json.Unmarshal(s.ToolChoice, &str) == nil && str != "auto" && str != "none" && str != "required" {
			c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'auto', 'none' and 'required'.", str), "session.tool_choice")
			return
		}
		next.toolChoice = s.ToolChoice
	}
	if len(s.MaxOutputTokens) > 0 {
		next.maxOutputTokens = s.MaxOutputTokens
	}
	if a := s.Audio; a != nil {
		if in := a.Input; in != nil {
			if f := in.Format; f != nil && (f.Type != "audio/pcm" || (f.Rate != 0 && f.Rate != wire.SampleRate)) {
				c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: {type: %q, rate: %d}. The reference agent takes audio/pcm at 24000 Hz.", f.Type, f.Rate),
					"session.audio.input.format")
				return
			}
			if len(in.TurnDetection) > 0 {
				if isNull(in.TurnDetection) {
					next.serverVAD = false
				} else {
					var td struct {
						Type              string `json:"type"`
						SilenceDurationMS *int   `json:"silence_duration_ms"`
						PrefixPaddingMS   *int   `json:"prefix_padding_ms"`
						CreateResponse    *bool  `json:"create_response"`
						InterruptResponse *bool  `json:"interrupt_response"`
					}
					if err := json.Unmarshal(in.TurnDetection, &td); err != nil || (td.Type != "server_vad" && td.Type != "semantic_vad") {
						c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'server_vad' and 'semantic_vad'.", td.Type),
							"session.audio.input.turn_detection.type")
						return
					}
					next.serverVAD = true
					if td.SilenceDurationMS != nil && *td.SilenceDurationMS > 0 {
						next.silenceMS = *td.SilenceDurationMS
					}
					if td.PrefixPaddingMS != nil && *td.PrefixPaddingMS >= 0 {
						next.prefixMS = *td.PrefixPaddingMS
					}
					if td.CreateResponse != nil {
						next.createResponse = *td.CreateResponse
					}
					if td.InterruptResponse != nil {
						next.interruptResponse = *td.InterruptResponse
					}
				}
			}
			if len(in.Transcription) > 0 {
				next.transcription = in.Transcription
			}
		}
		if out := a.Output; out != nil {
			if f := out.Format; f != nil && (f.Type != "audio/pcm" || (f.Rate != 0 && f.Rate != wire.SampleRate)) {
				c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: {type: %q, rate: %d}. The reference agent speaks audio/pcm at 24000 Hz.", f.Type, f.Rate),
					"session.audio.output.format")
				return
			}
			if v := out.Voice; v != nil && *v != next.voice {
				if !slices.Contains(gaVoices, *v) {
					c.invalid(id, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: '%s'.", *v, strings.Join(gaVoices, "', '")),
						"session.audio.output.voice")
					return
				}
				if spoke {
					c.invalid(id, "cannot_update_voice", "Cannot update a conversation's voice if assistant audio is present.", "session.audio.output.voice")
					return
				}
				next.voice = *v
			}
		}
	}
	c.mu.Lock()
	vadChanged := next.serverVAD != c.set.serverVAD || next.silenceMS != c.set.silenceMS || next.prefixMS != c.set.prefixMS
	c.set = next
	c.rebuildLocked()
	if vadChanged {
		c.resetVADLocked()
	}
	c.mu.Unlock()
	c.log.Debug("session updated", slog.Int("tools", len(next.tools)), slog.Bool("server_vad", next.serverVAD))
	c.em.Send(&wire.ServerEvent{Type: wire.SessionUpdated, Session: c.sessionJSON()})
}

// rebuildLocked derives the agent's model from the current instructions and tools.
func (c *conn) rebuildLocked() {
	tools := make([]toolInfo, len(c.set.tools))
	for i, t := range c.set.tools {
		tools[i] = parseTool(t.Name, t.Description, t.Parameters)
	}
	c.mdl = newModel(c.set.instructions, tools)
	if c.pol == nil {
		c.pol = newPolicy(c.mdl)
	} else {
		c.pol.setModel(c.mdl)
	}
}

func (c *conn) resetVADLocked() {
	c.vad = nil
	if c.set.serverVAD {
		c.vad, _ = audio.NewEndpointer(audio.EndpointerConfig{SilenceDuration: time.Duration(c.set.silenceMS) * time.Millisecond,
			PrefixPadding: time.Duration(c.set.prefixMS) * time.Millisecond})
	}
	c.vadItem = ""
}

func (c *conn) sessionJSON() json.RawMessage {
	c.mu.Lock()
	s := c.set
	c.mu.Unlock()
	var turn any
	if s.serverVAD {
		turn = map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": s.prefixMS,
			"silence_duration_ms": s.silenceMS, "create_response": s.createResponse, "interrupt_response": s.interruptResponse}
	}
	tools := s.tools
	if tools == nil {
		tools = []wire.Tool{}
	}
	transcription := s.transcription
	if len(transcription) == 0 {
		transcription = json.RawMessage("null")
	}
	maxTokens := s.maxOutputTokens
	if len(maxTokens) == 0 {
		maxTokens = json.RawMessage(`"inf"`)
	}
	b, _ := json.Marshal(map[string]any{
		"type": "realtime", "object": "realtime.session", "id": fmt.Sprintf("sess_ref%d", c.id), "model": c.model,
		"output_modalities": []string{"audio"}, "instructions": s.instructions, "tools": tools, "tool_choice": s.toolChoice,
		"max_output_tokens": maxTokens,
		"audio": map[string]any{
			"input":  map[string]any{"format": wire.PCM24k(), "turn_detection": turn, "transcription": transcription},
			"output": map[string]any{"format": wire.PCM24k(), "voice": s.voice, "speed": 1.0},
		},
	})
	return b
}

// ---- caller audio ----

// maxBuffer bounds the input buffer (15 minutes of 24 kHz audio, like the real API's limit).
const maxBuffer = 15 * 60 * wire.SampleRate

func (c *conn) appendAudio(ev *wire.ClientEvent) {
	pcm, err := agent.DecodePCM(ev.Audio)
	if err != nil || len(ev.Audio) == 0 {
		c.invalid(ev.EventID, wire.CodeInvalidValue, "Invalid 'audio': expected base64-encoded PCM16 audio.", "audio")
		return
	}
	c.mu.Lock()
	if len(c.buf)+len(pcm) > maxBuffer {
		c.mu.Unlock()
		c.invalid(ev.EventID, "input_audio_buffer_full", "The input audio buffer is full; commit or clear it.", "audio")
		return
	}
	start := c.total
	c.buf = append(c.buf, pcm...)
	c.total += int64(len(pcm))
	if c.vad == nil && c.ear == nil {
		c.openEarLocked() // manual turns: every appended sample belongs to the next commit
	}
	c.hearLocked(pcm)
	var events []audio.SpeechEvent
	if c.vad != nil {
		c.vad.Process(pcm, wire.SampleRate, sampleTime(start), func(e audio.SpeechEvent) { events = append(events, e) })
		if c.vadItem == "" && !c.vad.Speaking() {
			// Outside speech only the prefix padding is kept.
			keep := int64(c.set.prefixMS)*wire.SampleRate/1000 + wire.SampleRate/10
			if n := int64(len(c.buf)); n > keep {
				c.buf = append(c.buf[:0], c.buf[n-keep:]...)
			}
		}
	}
	c.mu.Unlock()
	for _, e := range events {
		c.vadEvent(e)
	}
}

func sampleTime(n int64) time.Duration { return time.Duration(n) * time.Second / wire.SampleRate }

// vadEvent runs server turn detection: speech_started (cancelling a response the caller talks
// over), then speech_stopped, the commit and, when configured, a response.
func (c *conn) vadEvent(e audio.SpeechEvent) {
	if e.Start {
		c.mu.Lock()
		c.vadItem = c.em.NewID("item")
		bufStart := c.total - int64(len(c.buf))
		c.vadStart = max(int64(e.Padded*wire.SampleRate/time.Second), bufStart)
		if c.ear == nil {
			c.openEarLocked()
			c.hearLocked(c.buf[c.vadStart-bufStart:])
		}
		item := c.vadItem
		active := c.active
		interrupt := c.set.interruptResponse
		c.mu.Unlock()
		c.em.Send(&wire.ServerEvent{Type: wire.SpeechStarted, AudioStartMS: wire.Int(int(e.Padded.Milliseconds())), ItemID: item})
		if active != nil && interrupt {
			active.stop("turn_detected")
		}
		return
	}
	c.mu.Lock()
	item := c.vadItem
	c.vadItem = ""
	if item == "" {
		c.mu.Unlock()
		return
	}
	bufStart := c.total - int64(len(c.buf))
	from := int(c.vadStart - bufStart)
	pcm := append([]int16(nil), c.buf[max(0, from):]...)
	c.buf = c.buf[:0]
	auto := c.set.createResponse
	ear := c.closeEarLocked(false)
	c.mu.Unlock()
	c.em.Send(&wire.ServerEvent{Type: wire.SpeechStopped, AudioEndMS: wire.Int(int(e.At.Milliseconds())), ItemID: item})
	c.commitTurn(item, pcm, "", ear)
	if auto {
		c.autoResponse()
	}
}

func (c *conn) commit(ev *wire.ClientEvent) {
	c.mu.Lock()
	if len(c.buf) < wire.SampleRate/10 {
		n := len(c.buf)
		c.mu.Unlock()
		c.invalid(ev.EventID, wire.CodeCommitEmpty, fmt.Sprintf("Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has %.2fms of audio.",
			float64(n)*1000/wire.SampleRate), "")
		return
	}
	pcm := append([]int16(nil), c.buf...)
	c.buf = c.buf[:0]
	item := c.vadItem
	c.vadItem = ""
	ear := c.closeEarLocked(false)
	c.mu.Unlock()
	if item == "" {
		item = c.em.NewID("item")
	}
	c.commitTurn(item, pcm, "", ear)
}

// openEarLocked starts streaming the turn being spoken through the open-vocabulary model on the
// caller's channel (without a channel the turn is decoded whole when committed).
func (c *conn) openEarLocked() {
	if c.channel == nil {
		return
	}
	if c.lastEar != nil {
		<-c.lastEar.done // the channel streams one turn at a time; the last one is nearly done
	}
	s, err := c.channel.Stream(wire.SampleRate, nil)
	if err != nil {
		c.log.Warn("cannot stream the turn", slog.Any("err", err))
		return
	}
	e := &ear{stream: s, ch: make(chan []int16, earQueue), done: make(chan struct{})}
	c.ear, c.lastEar = e, e
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(e.done)
		for pcm := range e.ch {
			if e.err == nil {
				e.err = s.Write(pcm)
			}
		}
		if e.broken || e.err != nil || c.ctx.Err() != nil {
			s.Abort()
			return
		}
		e.res, e.err = s.Finish()
	}()
}

// hearLocked feeds the open stream; a stream that falls too far behind is given up.
func (c *conn) hearLocked(pcm []int16) {
	e := c.ear
	if e == nil || e.broken || len(pcm) == 0 {
		return
	}
	select {
	case e.ch <- append([]int16(nil), pcm...):
	default:
		e.broken = true
		c.log.Warn("speech recognition fell behind the caller; decoding the turn whole")
	}
}

// closeEarLocked ends the open stream's input and detaches it; abandon discards its result.
func (c *conn) closeEarLocked(abandon bool) *ear {
	e := c.ear
	c.ear = nil
	if e != nil {
		e.broken = e.broken || abandon
		close(e.ch)
	}
	return e
}

// commitTurn adds a caller item and starts recognizing it against what the agent asked last.
func (c *conn) commitTurn(itemID string, pcm []int16, text string, e *ear) {
	c.mu.Lock()
	prev := c.lastItem
	c.lastItem = itemID
	c.items[itemID] = &item{role: "user", typ: "message"}
	t := &turn{itemID: itemID, pcm: pcm, text: text, exp: c.pol.exp, m: c.mdl, ear: e, at: time.Now(), done: make(chan struct{})}
	c.turns = append(c.turns, t)
	c.wg.Add(1)
	c.mu.Unlock()
	var prevPtr *string
	if prev != "" {
		prevPtr = wire.Str(prev)
	}
	content := wire.Content{Type: "input_audio", Transcript: nil}
	if text != "" {
		content = wire.Content{Type: "input_text", Text: text}
	} else {
		c.em.Send(&wire.ServerEvent{Type: wire.InputCommitted, ItemID: itemID, PreviousItemID: prevPtr})
	}
	it := &wire.Item{ID: itemID, Object: "realtime.item", Type: "message", Status: "completed", Role: "user", Content: []wire.Content{content}}
	c.em.Send(&wire.ServerEvent{Type: wire.ItemAdded, PreviousItemID: prevPtr, Item: it})
	c.em.Send(&wire.ServerEvent{Type: wire.ItemDone, PreviousItemID: prevPtr, Item: it})
	go c.recognize(t)
}

func (c *conn) recognize(t *turn) {
	defer c.wg.Done()
	defer close(t.done)
	if t.text != "" {
		words := strings.Fields(strings.ToLower(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(t.text)))
		ws := make([]asr.Word, len(words))
		for i, w := range words {
			ws[i] = asr.Word{Text: w}
		}
		lm := asr.Result{Text: strings.Join(words, " "), Words: ws}
		var ans asr.Answer
		typed := false
		if t.exp.kind == expectField && t.exp.field != nil {
			if s := t.exp.field.slot(c.s.rec.Known); s != nil {
				typed = true
				ans.Value, ans.OK = s.Parse(lm.Text)
				ans.Result = lm
			}
		}
		t.h = c.lst.understand(c.ctx, t.m, t.exp, nil, lm, ans, typed)
		return
	}
	var streamed *asr.Result
	if e := t.ear; e != nil {
		select {
		case <-e.done:
		case <-c.ctx.Done():
			return
		}
		if e.err == nil && !e.broken {
			streamed = &e.res
		}
	}
	t.h = c.lst.hear(c.ctx, t.m, t.exp, t.pcm, streamed)
	if c.ctx.Err() != nil {
		return
	}
	c.log.Debug("caller turn recognized", slog.String("item", t.itemID), slog.String("transcript", t.h.transcript),
		slog.Int("intent", int(t.h.intent)), slog.Bool("streamed", streamed != nil),
		slog.Int64("asr_ms", time.Since(t.at).Milliseconds())) // from the commit: what the caller waits for
	c.em.Send(&wire.ServerEvent{Type: wire.InputTranscriptDone, ItemID: t.itemID, ContentIndex: wire.Int(0), Transcript: wire.Str(t.h.transcript)})
}

// ---- conversation items ----

func (c *conn) itemCreate(ev *wire.ClientEvent) {
	it := ev.Item
	if it == nil {
		c.invalid(ev.EventID, "missing_required_parameter", "Missing required parameter: 'item'.", "item")
		return
	}
	switch it.Type {
	case "function_call_output":
		if it.Output == nil {
			c.invalid(ev.EventID, "missing_required_parameter", "Missing required parameter: 'item.output'.", "item.output")
			return
		}
		c.mu.Lock()
		name, known := c.calls[it.CallID]
		if known && !c.answered[it.CallID] {
			c.answered[it.CallID] = true
			c.outputs = append(c.outputs, toolOutput{name: name, output: *it.Output})
		}
		c.mu.Unlock()
		if !known {
			c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Tool call ID '%s' not found in conversation.", it.CallID), "item.call_id")
			return
		}
		id := it.ID
		if id == "" {
			id = c.em.NewID("item")
		}
		c.mu.Lock()
		prev := c.lastItem
		c.lastItem = id
		c.items[id] = &item{role: "", typ: it.Type}
		c.mu.Unlock()
		out := &wire.Item{ID: id, Object: "realtime.item", Type: it.Type, Status: "completed", CallID: it.CallID, Output: it.Output}
		c.em.Send(&wire.ServerEvent{Type: wire.ItemAdded, PreviousItemID: strPtr(prev), Item: out})
		c.em.Send(&wire.ServerEvent{Type: wire.ItemDone, PreviousItemID: strPtr(prev), Item: out})
	case "message":
		if it.Role != "user" && it.Role != "assistant" && it.Role != "system" {
			c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'user', 'assistant' and 'system'.", it.Role), "item.role")
			return
		}
		var text strings.Builder
		var audio []int16
		for _, ct := range it.Content {
			switch ct.Type {
			case "input_text", "text", "output_text":
				text.WriteString(ct.Text + " ")
			case "input_audio":
				pcm, err := agent.DecodePCM(ct.Audio)
				if err != nil {
					c.invalid(ev.EventID, wire.CodeInvalidValue, "Invalid 'item.content.audio': expected base64-encoded PCM16 audio.", "item.content")
					return
				}
				audio = append(audio, pcm...)
			default:
				c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Unsupported content type.", ct.Type), "item.content.type")
				return
			}
		}
		id := it.ID
		if id == "" {
			id = c.em.NewID("item")
		}
		if it.Role == "user" {
			c.commitTurn(id, audio, strings.TrimSpace(text.String()), nil)
			return
		}
		c.mu.Lock()
		prev := c.lastItem
		c.lastItem = id
		c.items[id] = &item{role: it.Role, typ: "message"}
		c.mu.Unlock()
		out := *it
		out.ID, out.Object, out.Status = id, "realtime.item", "completed"
		c.em.Send(&wire.ServerEvent{Type: wire.ItemAdded, PreviousItemID: strPtr(prev), Item: &out})
		c.em.Send(&wire.ServerEvent{Type: wire.ItemDone, PreviousItemID: strPtr(prev), Item: &out})
	case "function_call":
		// A call the client adds to the history (replaying a conversation): kept, never answered.
		id := it.ID
		if id == "" {
			id = c.em.NewID("item")
		}
		c.mu.Lock()
		prev := c.lastItem
		c.lastItem = id
		c.items[id] = &item{typ: it.Type}
		c.mu.Unlock()
		out := *it
		out.ID, out.Object, out.Status = id, "realtime.item", "completed"
		c.em.Send(&wire.ServerEvent{Type: wire.ItemAdded, PreviousItemID: strPtr(prev), Item: &out})
		c.em.Send(&wire.ServerEvent{Type: wire.ItemDone, PreviousItemID: strPtr(prev), Item: &out})
	default:
		c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'message', 'function_call' and 'function_call_output'.", it.Type), "item.type")
	}
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (c *conn) truncate(ev *wire.ClientEvent) {
	if ev.AudioEndMS == nil || *ev.AudioEndMS < 0 {
		c.invalid(ev.EventID, wire.CodeInvalidValue, "Invalid value for 'audio_end_ms': expected a non-negative integer.", "audio_end_ms")
		return
	}
	if ev.ContentIndex != nil && *ev.ContentIndex != 0 {
		c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%d'. Supported values are: '0'.", *ev.ContentIndex), "content_index")
		return
	}
	c.mu.Lock()
	it := c.items[ev.ItemID]
	var audioMS int
	if it != nil {
		audioMS = it.samples * 1000 / wire.SampleRate
	}
	c.mu.Unlock()
	switch {
	case it == nil:
		c.invalid(ev.EventID, "item_not_found", "Item with item_id not found: "+ev.ItemID, "item_id")
		return
	case it.role != "assistant" || it.samples == 0:
		c.invalid(ev.EventID, "unsupported_content_type", "Only assistant messages with audio content can be truncated.", "item_id")
		return
	case *ev.AudioEndMS > audioMS:
		c.invalid(ev.EventID, wire.CodeInvalidValue, fmt.Sprintf("Audio content of %dms is already shorter than %dms", audioMS, *ev.AudioEndMS), "audio_end_ms")
		return
	}
	c.mu.Lock()
	c.pol.truncated()
	c.mu.Unlock()
	c.em.Send(&wire.ServerEvent{Type: wire.ItemTruncated, ItemID: ev.ItemID, ContentIndex: wire.Int(0), AudioEndMS: wire.Int(*ev.AudioEndMS)})
}

func (c *conn) itemDelete(ev *wire.ClientEvent) {
	c.mu.Lock()
	_, ok := c.items[ev.ItemID]
	delete(c.items, ev.ItemID)
	c.mu.Unlock()
	if !ok {
		c.invalid(ev.EventID, "item_not_found", "Item with item_id not found: "+ev.ItemID, "item_id")
		return
	}
	c.em.Send(&wire.ServerEvent{Type: wire.ItemDeleted, ItemID: ev.ItemID})
}

// ---- responses ----

func (c *conn) responseCreate(ev *wire.ClientEvent) {
	if len(ev.Response) > 0 && !isNull(ev.Response) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(ev.Response, &obj) != nil {
			c.invalid(ev.EventID, "invalid_type", "Invalid type for 'response': expected an object.", "response")
			return
		}
	}
	c.mu.Lock()
	if a := c.active; a != nil {
		c.mu.Unlock()
		c.invalid(ev.EventID, wire.CodeActiveResponse, fmt.Sprintf("Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.", a.rw.ID()), "")
		return
	}
	c.startLocked(false)
	c.mu.Unlock()
}

// autoResponse is server VAD's response to a committed turn: now, or once the active response
// (being cancelled) is done.
func (c *conn) autoResponse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active != nil {
		c.pendAuto = true
		return
	}
	c.startLocked(true)
}

// startLocked sends response.created and hands the response to the responder.
func (c *conn) startLocked(auto bool) {
	rw, err := c.em.Begin()
	if err != nil {
		return
	}
	r := &response{rw: rw, cancel: make(chan struct{}), auto: auto, turnsTo: len(c.turns), outputTo: len(c.outputs)}
	c.active = r
	select {
	case c.respQ <- r:
	default: // cannot happen: one response is active at a time
		r.stop("busy")
	}
}

func (c *conn) responseCancel(ev *wire.ClientEvent) {
	c.mu.Lock()
	a := c.active
	c.mu.Unlock()
	if a == nil || (ev.ResponseID != "" && ev.ResponseID != a.rw.ID()) {
		c.invalid(ev.EventID, wire.CodeCancelNotActive, "Cancellation failed: no active response found", "")
		return
	}
	a.stop("client_cancelled")
}

// respond is the responder goroutine: one response at a time, in order.
func (c *conn) respond() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case r := <-c.respQ:
			c.run(r)
		}
	}
}

// run produces one response: it waits for the caller turns it answers to be recognized, lets the
// policy decide, and sends function calls or speech.
func (c *conn) run(r *response) {
	c.mu.Lock()
	pending := append([]*turn(nil), c.turns[c.consumed:r.turnsTo]...)
	c.mu.Unlock()
	for _, t := range pending {
		select {
		case <-t.done:
		case <-r.cancel:
		case <-c.ctx.Done():
		}
	}
	status, reason := "completed", ""
	var spoken string
	heardWords := 0
	select {
	case <-r.cancel:
		status, reason = "cancelled", r.reason
	case <-c.ctx.Done():
		status, reason = "cancelled", "connection closed"
	default:
		c.mu.Lock()
		for _, o := range c.outputs[c.outUsed:r.outputTo] {
			c.pol.toolResult(o.name, o.output)
		}
		c.outUsed = r.outputTo
		for _, t := range pending {
			c.pol.heard(t.h)
			heardWords += len(strings.Fields(t.h.transcript))
		}
		c.consumed = r.turnsTo
		act := c.pol.next()
		c.mu.Unlock()
		switch {
		case len(act.calls) > 0:
			for _, cl := range act.calls {
				// The call is registered before the client can answer it.
				c.mu.Lock()
				id, err := r.rw.FunctionCall(cl.name, string(cl.args))
				if err == nil {
					c.calls[id] = cl.name
				}
				c.mu.Unlock()
				if err != nil {
					status, reason = "failed", "connection closed"
					break
				}
				c.log.Debug("tool call", slog.String("tool", cl.name), slog.String("args", string(cl.args)))
			}
		case act.say != "":
			spoken = act.say
			if s, rsn := c.speak(r, act.say); s != "" {
				status, reason = s, rsn
			}
		}
	}
	if status == "cancelled" && reason == "" {
		reason = "client_cancelled"
	}
	usage := &wire.Usage{InputTokens: heardWords, OutputTokens: len(strings.Fields(spoken))}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	c.mu.Lock()
	c.active = nil
	r.rw.Done(status, reason, nil, usage)
	auto := c.pendAuto
	c.pendAuto = false
	if auto && c.ctx.Err() == nil {
		c.startLocked(true)
	}
	c.mu.Unlock()
	c.log.Debug("response done", slog.String("response", r.rw.ID()), slog.String("status", status), slog.String("said", spoken))
}

// chunk is the audio per delta (100 ms).
const chunk = wire.SampleRate / 10

// speak streams an utterance sentence by sentence: a transcript delta, then its audio in 100 ms
// deltas, paced to run at most AudioLead ahead of real time. It returns a non-empty status when
// the response ends early.
func (c *conn) speak(r *response, text string) (status, reason string) {
	itemID, err := r.rw.BeginAudio()
	if err != nil {
		return "failed", "connection closed"
	}
	c.mu.Lock()
	c.items[itemID] = &item{role: "assistant", typ: "message"}
	c.lastItem = itemID
	c.spoke = true
	c.mu.Unlock()
	lead := c.s.cfg.AudioLead
	start := time.Now()
	sent := 0
	for i, sentence := range sentences(text) {
		pcm, err := c.s.voice.speak(c.ctx, sentence)
		if err != nil {
			c.log.Error("speech synthesis failed", slog.Any("err", err))
			return "failed", "synthesis failed"
		}
		delta := sentence
		if i > 0 {
			delta = " " + sentence
		}
		if r.rw.Transcript(delta) != nil {
			return "failed", "connection closed"
		}
		for off := 0; off < len(pcm); off += chunk {
			if lead >= 0 {
				due := start.Add(sampleTime(int64(sent)) - lead)
				if wait := time.Until(due); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-r.cancel:
						t.Stop()
					case <-c.ctx.Done():
						t.Stop()
					}
				}
			}
			select {
			case <-r.cancel:
				return "cancelled", r.reason
			case <-c.ctx.Done():
				return "cancelled", "connection closed"
			default:
			}
			part := pcm[off:min(off+chunk, len(pcm))]
			if r.rw.Audio(part) != nil {
				return "failed", "connection closed"
			}
			sent += len(part)
			c.mu.Lock()
			c.items[itemID].samples = sent
			c.mu.Unlock()
		}
	}
	return "", ""
}
