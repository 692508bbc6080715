package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/agent/internal/params"
)

// GeminiPath is the Live API's WebSocket path (v1beta).
const GeminiPath = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

// GeminiFake is a loopback Gemini Live (BidiGenerateContent) server. Like the real API it sends
// JSON in binary frames, reports failures only as close frames (1007 invalid argument, 1008
// policy, 1011 internal), requires setup first and exactly one top-level field per message, and
// validates function declarations against the documented Schema subset (a JSON Schema keyword
// such as additionalProperties closes the connection with 1007 `Invalid JSON payload received.
// Unknown name "additionalProperties" at 'setup.tools[0].function_declarations[0].parameters'`).
// A setup asking for session resumption gets resumption handles after each turn, and a later
// setup may resume from one (on any connection: the conversation is the fake's).
type GeminiFake struct {
	traffic
	script    cursor
	key       string
	split     bool
	setups    []map[string]any
	handles   map[string]bool
	handleSeq int
	resumed   []string
	conns     map[int]*geminiConn
	bg        sync.WaitGroup // goAway timers
	server
}

// NewGeminiFake starts a fake on loopback; it is closed when tb ends.
func NewGeminiFake(tb testing.TB, s Script) *GeminiFake {
	tb.Helper()
	f := &GeminiFake{script: cursor{s: s}, key: s.Key, split: s.SplitToolTurns, traffic: traffic{audioType: "realtimeInput.audio"},
		handles: map[string]bool{}, conns: map[int]*geminiConn{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	tb.Cleanup(f.Close)
	return f
}

// URL is the ws:// endpoint.
func (f *GeminiFake) URL() string { return f.wsURL(GeminiPath) }

// Close drops every connection, stops the server and waits for the goAway timers.
func (f *GeminiFake) Close() {
	f.server.Close()
	f.bg.Wait()
}

// Setups returns the setup objects received (keys in camelCase).
func (f *GeminiFake) Setups() []map[string]any { return snapshot(&f.mu, &f.setups) }

// Resumed returns the handles that setups resumed from, in order.
func (f *GeminiFake) Resumed() []string { return snapshot(&f.mu, &f.resumed) }

// ForgetHandles makes every resumption handle issued so far invalid, as when they expire.
func (f *GeminiFake) ForgetHandles() {
	f.mu.Lock()
	f.handles = map[string]bool{}
	f.mu.Unlock()
}

// GoAway announces the end of every open connection, as the service does before its connection
// time limit, and closes each after timeLeft (earlier if the client leaves first).
func (f *GeminiFake) GoAway(timeLeft time.Duration) {
	f.mu.Lock()
	var conns []*geminiConn
	for _, c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.send("goAway", map[string]any{"goAway": map[string]any{"timeLeft": fmt.Sprintf("%gs", timeLeft.Seconds())}})
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			select {
			case <-time.After(timeLeft):
				c.closeWith(websocket.CloseGoingAway, "session time limit reached")
			case <-c.gone:
			}
		}()
	}
}

// Closes returns the close frames the fake sent ("1007 reason").
func (f *GeminiFake) Closes() []string { return f.closeFrames() }

func (f *GeminiFake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	f.upgrade(Handshake{Path: r.URL.Path, Auth: key != "", Model: r.URL.Query().Get("model")})
	if f.reg.Closed() || r.URL.Path != GeminiPath {
		http.NotFound(w, r)
		return
	}
	if f.key != "" && key != f.key {
		// As the service does: the upgrade is refused with HTTP 400 and the reason in the body.
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com",`+
			`"metadata":{"service":"generativelanguage.googleapis.com"}}]}}`)
		return
	}
	f.reg.Serve(w, r, f.serveConn)
}

func (f *GeminiFake) serveConn(ws *websocket.Conn, id int) {
	c := &geminiConn{wsConn: wsConn{t: &f.traffic, id: id, ws: ws}, f: f, gone: make(chan struct{})}
	f.mu.Lock()
	f.conns[id] = c
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, id)
		f.mu.Unlock()
	}()
	c.serve()
}

type geminiConn struct {
	wsConn
	f *GeminiFake

	mu            sync.Mutex
	setupDone     bool
	manual        bool // automatic activity detection disabled
	transcribeIn  bool
	transcribeOut bool
	silenceMS     int
	activity      bool
	activityAudio int
	vad           vad
	turns         turnQueue
	calls         pendingCalls  // function calls waiting for their responses
	resumption    bool          // the setup asked for resumption handles
	gone          chan struct{} // closed when the connection has ended
}

func (c *geminiConn) send(kind string, msg any) error {
	return c.sendJSON(websocket.BinaryMessage, kind, msg) // the Live API's JSON comes in binary frames
}

func (c *geminiConn) closeWith(code int, reason string) {
	if len(reason) > 123 { // a close frame's payload is at most 125 bytes, the code included
		reason = strings.ToValidUTF8(reason[:123], "")
	}
	c.wsConn.closeWith(code, reason)
}

func (c *geminiConn) serve() {
	defer func() {
		c.ws.Close()
		close(c.gone)
		c.turns.end()
	}()
	c.readLoop(c.handle)
}

var geminiClientFields = []string{"setup", "clientContent", "realtimeInput", "toolResponse"}

// handle processes one client message; false means the connection was closed.
func (c *geminiConn) handle(data []byte) bool {
	norm, err := gemini.CamelKeys(data)
	var msg map[string]any
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(norm))
		dec.UseNumber()
		err = dec.Decode(&msg)
	}
	if err != nil {
		c.record("(invalid json)", data)
		c.closeWith(websocket.CloseInvalidFramePayloadData, "Invalid JSON payload received. Unexpected token.")
		return false
	}
	keys := make([]string, 0, len(msg))
	for k := range msg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	typ := strings.Join(keys, "+")
	if len(keys) == 1 && keys[0] == "realtimeInput" {
		if ri, ok := msg["realtimeInput"].(map[string]any); ok {
			sub := make([]string, 0, len(ri))
			for k := range ri {
				sub = append(sub, k)
			}
			sort.Strings(sub)
			typ += "." + strings.Join(sub, "+")
		}
	}
	c.record(typ, norm)
	for _, k := range keys {
		if !slices.Contains(geminiClientFields, k) {
			c.closeWith(websocket.CloseInvalidFramePayloadData, fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k))
			return false
		}
	}
	if len(keys) != 1 {
		c.closeWith(websocket.CloseInvalidFramePayloadData, fmt.Sprintf("Invalid JSON payload received. Oneof field 'message_type' is already set. Cannot set '%s'", keys[1]))
		return false
	}
	c.mu.Lock()
	setupDone := c.setupDone
	c.mu.Unlock()
	switch key := keys[0]; {
	case key == "setup" && setupDone:
		c.closeWith(websocket.CloseInvalidFramePayloadData, "Request contains an invalid argument. Setup may only be sent once.")
		return false
	case key != "setup" && !setupDone:
		c.closeWith(websocket.CloseInvalidFramePayloadData, "Request contains an invalid argument. The first message must be setup.")
		return false
	case key == "setup":
		return c.setup(msg["setup"], data)
	case key == "realtimeInput":
		return c.realtimeInput(msg["realtimeInput"])
	case key == "toolResponse":
		return c.toolResponse(msg["toolResponse"])
	default: // clientContent
		cc, _ := msg["clientContent"].(map[string]any)
		if cc["turnComplete"] == true {
			c.startTurn()
		}
	}
	return true
}

func (c *geminiConn) record(typ string, data []byte) {
	audio := ""
	if strings.HasPrefix(typ, "realtimeInput") {
		audio = "data"
	}
	c.f.receive(c.id, typ, data, audio)
}

var (
	geminiSetupKeys = params.Tree{"model": nil, "systemInstruction": nil, "tools": nil, "inputAudioTranscription": nil, "outputAudioTranscription": nil,
		"sessionResumption":        {"handle": nil, "transparent": nil},
		"contextWindowCompression": {"slidingWindow": {"targetTokens": nil}, "triggerTokens": nil},
		"proactivity":              nil,
		"generationConfig": {"responseModalities": nil, "temperature": nil, "topP": nil, "topK": nil, "maxOutputTokens": nil, "candidateCount": nil,
			"presencePenalty": nil, "frequencyPenalty": nil, "mediaResolution": nil, "thinkingConfig": nil, "enableAffectiveDialog": nil, "seed": nil,
			"speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": nil}}, "languageCode": nil, "multiSpeakerVoiceConfig": nil}},
		"realtimeInputConfig": {"automaticActivityDetection": {"disabled": nil, "startOfSpeechSensitivity": nil, "endOfSpeechSensitivity": nil,
			"prefixPaddingMs": nil, "silenceDurationMs": nil}, "activityHandling": nil, "turnCoverage": nil}}
)

func (c *geminiConn) invalid(format string, args ...any) bool {
	c.closeWith(websocket.CloseInvalidFramePayloadData, "Request contains an invalid argument. "+fmt.Sprintf(format, args...))
	return false
}

func (c *geminiConn) setup(v any, raw []byte) bool {
	s, _ := v.(map[string]any)
	if bad := params.Unknown("setup", s, geminiSetupKeys); bad != "" {
		name := bad[strings.LastIndex(bad, ".")+1:]
		parent := strings.TrimSuffix(bad, "."+name)
		c.closeWith(websocket.CloseInvalidFramePayloadData, fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", name, parent))
		return false
	}
	c.f.mu.Lock()
	c.f.setups = append(c.f.setups, s)
	c.f.mu.Unlock()
	if m, _ := s["model"].(string); !strings.HasPrefix(m, "models/") || len(m) == len("models/") {
		return c.invalid("setup.model must be models/{model}, got %q.", s["model"])
	}
	gc, _ := s["generationConfig"].(map[string]any)
	if mods, ok := gc["responseModalities"]; ok && !slices.Equal(params.Strings(mods), []string{"AUDIO"}) {
		return c.invalid("Native audio models only support the AUDIO response modality, got %v.", mods)
	}
	if voice, ok := params.Path(gc, "speechConfig", "voiceConfig", "prebuiltVoiceConfig", "voiceName"); ok && !slices.Contains(gemini.Voices, fmt.Sprint(voice)) {
		return c.invalid("Voice %q is not supported.", voice)
	}
	if msg := c.checkTools(raw); msg != "" {
		c.closeWith(websocket.CloseInvalidFramePayloadData, msg)
		return false
	}
	if sr, ok := s["sessionResumption"].(map[string]any); ok {
		if h, _ := sr["handle"].(string); h != "" {
			c.f.mu.Lock()
			known := c.f.handles[h]
			if known {
				c.f.resumed = append(c.f.resumed, h)
			}
			c.f.mu.Unlock()
			if !known {
				return c.invalid("setup.session_resumption.handle is not a valid session handle or has expired.")
			}
		}
		c.resumption = true
	}
	ric, _ := s["realtimeInputConfig"].(map[string]any)
	aad, _ := ric["automaticActivityDetection"].(map[string]any)
	if h, ok := ric["activityHandling"]; ok && !slices.Contains([]string{"START_OF_ACTIVITY_INTERRUPTS", "NO_INTERRUPTION"}, fmt.Sprint(h)) {
		return c.invalid("Invalid value at 'setup.realtime_input_config.activity_handling' (%v).", h)
	}
	if tc, ok := ric["turnCoverage"]; ok && !slices.Contains([]string{"TURN_INCLUDES_ONLY_ACTIVITY", "TURN_INCLUDES_ALL_INPUT"}, fmt.Sprint(tc)) {
		return c.invalid("Invalid value at 'setup.realtime_input_config.turn_coverage' (%v).", tc)
	}
	c.mu.Lock()
	c.setupDone = true
	c.manual = aad["disabled"] == true
	c.silenceMS = 500
	if n, ok := aad["silenceDurationMs"].(json.Number); ok {
		i, _ := n.Int64()
		c.silenceMS = int(i)
	}
	_, c.transcribeIn = s["inputAudioTranscription"]
	_, c.transcribeOut = s["outputAudioTranscription"]
	c.mu.Unlock()
	c.send("setupComplete", map[string]any{"setupComplete": map[string]any{}})
	c.resumptionUpdate(true)
	return true
}

// resumptionUpdate tells a client that asked for resumption whether (and from which handle) the
// session can be resumed now: not while the model speaks or waits for tool results.
func (c *geminiConn) resumptionUpdate(resumable bool) {
	if !c.resumption {
		return
	}
	u := map[string]any{"resumable": resumable}
	if resumable {
		c.f.mu.Lock()
		c.f.handleSeq++
		h := fmt.Sprintf("resume-handle-%d", c.f.handleSeq)
		c.f.handles[h] = true
		c.f.mu.Unlock()
		u["newHandle"] = h
	} else {
		u["newHandle"] = ""
	}
	c.send("sessionResumptionUpdate", map[string]any{"sessionResumptionUpdate": u})
}

func (c *geminiConn) realtimeInput(v any) bool {
	ri, _ := v.(map[string]any)
	if len(ri) != 1 {
		keys := make([]string, 0, len(ri))
		for k := range ri {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return c.invalid("realtimeInput must carry exactly one input, got %v.", keys)
	}
	c.mu.Lock()
	manual := c.manual
	c.mu.Unlock()
	switch {
	case ri["audio"] != nil:
		a, _ := ri["audio"].(map[string]any)
		if mt := fmt.Sprint(a["mimeType"]); mt != gemini.InputMIME {
			c.f.violation("caller audio sent as %q, want %s", mt, gemini.InputMIME)
		}
		pcm, err := agent.DecodePCM(fmt.Sprint(a["data"]))
		if err != nil {
			return c.invalid("realtimeInput.audio.data is not base64 PCM16.")
		}
		c.audio(pcm, manual)
	case ri["activityStart"] != nil || ri["activityEnd"] != nil:
		if !manual {
			return c.invalid("Explicit activity control is not supported when automatic activity detection is enabled.")
		}
		c.mu.Lock()
		start, open := ri["activityStart"] != nil, c.activity
		turn := c.turns.current()
		if start {
			c.activity, c.activityAudio = true, 0
		} else {
			c.activity = false
		}
		c.mu.Unlock()
		switch {
		case start && open:
			c.f.violation("activityStart while an activity is open")
		case start && turn != nil:
			turn.stop() // START_OF_ACTIVITY_INTERRUPTS
		case !start && !open:
			c.f.violation("activityEnd without activityStart")
		case !start:
			c.startTurn()
		}
	case ri["audioStreamEnd"] != nil, ri["text"] != nil, ri["mediaChunks"] != nil, ri["video"] != nil:
	default:
		return c.invalid("Unknown realtimeInput field.")
	}
	return true
}

func (c *geminiConn) audio(pcm []int16, manual bool) {
	ms := len(pcm) * 1000 / gemini.InputRate
	c.mu.Lock()
	if manual {
		if c.activity {
			c.activityAudio += len(pcm)
		}
		c.mu.Unlock()
		return
	}
	started, stopped := c.vad.feed(pcm, ms, c.silenceMS)
	c.mu.Unlock()
	turn := c.turns.current()
	if started && turn != nil {
		turn.stop()
	}
	if stopped {
		c.startTurn()
	}
}

// startTurn runs the next reply as a model turn, after any turn still finishing.
func (c *geminiConn) startTurn() {
	reply := c.f.script.reply()
	c.turns.start(func(t *turn) { c.runTurn(t, reply) })
}

func (c *geminiConn) runTurn(t *turn, reply Reply) {
	switch {
	case reply.CloseCode != 0:
		c.closeWith(reply.CloseCode, reply.CloseReason)
		return
	case reply.GoAway > 0:
		c.send("goAway", map[string]any{"goAway": map[string]any{"timeLeft": fmt.Sprintf("%gs", reply.GoAway.Seconds())}})
		select {
		case <-time.After(reply.GoAway):
		case <-t.cancel:
		}
		c.closeWith(websocket.CloseGoingAway, "session time limit reached")
		return
	case reply.Drop && reply.DropAfter == 0:
		c.ws.UnderlyingConn().Close()
		return
	}
	c.mu.Lock()
	in, out := c.transcribeIn, c.transcribeOut
	c.mu.Unlock()
	if in {
		c.send("serverContent.inputTranscription", map[string]any{"serverContent": map[string]any{
			"inputTranscription": map[string]any{"text": c.f.script.callerTranscript("(caller speech)"), "finished": true}}})
	}
	c.resumptionUpdate(false)
	var audioMS int
	for {
		ms, ok := c.speak(t, reply, out)
		audioMS += ms
		if !ok {
			return // dropped
		}
		if c.interrupted(t) {
			return
		}
		if len(reply.Calls) == 0 {
			break
		}
		if !c.callTools(t, reply.Calls) {
			return
		}
		reply = c.f.script.reply() // the model continues after the tool responses
	}
	c.turnComplete(audioMS)
	c.resumptionUpdate(true)
}

// turnComplete ends a model turn, with its usage.
func (c *geminiConn) turnComplete(audioMS int) {
	c.send("serverContent.generationComplete", map[string]any{"serverContent": map[string]any{"generationComplete": true}})
	c.send("serverContent.turnComplete", map[string]any{
		"serverContent": map[string]any{"turnComplete": true},
		"usageMetadata": map[string]any{"promptTokenCount": 180, "responseTokenCount": audioMS / 40, "totalTokenCount": 180 + audioMS/40,
			"promptTokensDetails":   []any{map[string]any{"modality": "TEXT", "tokenCount": 100}, map[string]any{"modality": "AUDIO", "tokenCount": 80}},
			"responseTokensDetails": []any{map[string]any{"modality": "AUDIO", "tokenCount": audioMS / 40}}}})
}

// interrupted ends the turn as interrupted if it was cancelled.
func (c *geminiConn) interrupted(t *turn) bool {
	if !t.cancelled() {
		return false
	}
	c.mu.Lock()
	ids := c.calls.drop()
	c.mu.Unlock()
	c.send("serverContent.interrupted", map[string]any{"serverContent": map[string]any{"interrupted": true}})
	if len(ids) > 0 {
		c.send("toolCallCancellation", map[string]any{"toolCallCancellation": map[string]any{"ids": ids}})
	}
	c.send("serverContent.turnComplete", map[string]any{"serverContent": map[string]any{"turnComplete": true}})
	return true
}

// speak streams the reply's audio (and output transcription); false when the connection dropped.
func (c *geminiConn) speak(t *turn, reply Reply, transcribe bool) (int, bool) {
	sent, end := reply.play(t.cancel, func() int { return gemini.OutputRate }, func(ch chunk) bool {
		c.send("serverContent.modelTurn", map[string]any{"serverContent": map[string]any{"modelTurn": map[string]any{"parts": []any{
			map[string]any{"inlineData": map[string]any{"mimeType": "audio/pcm;rate=24000", "data": agent.EncodePCM(ch.pcm)}}}}}})
		if transcribe && ch.text != "" {
			c.send("serverContent.outputTranscription", map[string]any{"serverContent": map[string]any{"outputTranscription": map[string]any{"text": ch.text}}})
		}
		return !c.dropAt(reply, ch.i)
	})
	if end == playStopped {
		return 0, false
	}
	return sent * 1000 / gemini.OutputRate, true
}

// callTools sends one toolCall with every call and waits for their responses; false when the turn
// was interrupted (then already reported) or the connection ended.
func (c *geminiConn) callTools(t *turn, calls []Call) bool {
	c.mu.Lock()
	done := c.calls.batch()
	var fcs []any
	for _, call := range calls {
		id := c.calls.add("function-call-%d-%d", c.id)
		var args any
		json.Unmarshal([]byte(call.Arguments), &args)
		fcs = append(fcs, map[string]any{"id": id, "name": call.Name, "args": args})
	}
	c.mu.Unlock()
	c.send("toolCall", map[string]any{"toolCall": map[string]any{"functionCalls": fcs}})
	if c.f.split {
		// This model ends the tool-call turn here and answers the results in a new turn.
		c.turnComplete(0)
	}
	select {
	case <-done:
		return true
	case <-t.cancel:
		c.interrupted(t)
		return false
	}
}

func (c *geminiConn) toolResponse(v any) bool {
	tr, _ := v.(map[string]any)
	frs, _ := tr["functionResponses"].([]any)
	if len(frs) == 0 {
		return c.invalid("toolResponse.functionResponses is required.")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, fr := range frs {
		m, _ := fr.(map[string]any)
		id, _ := m["id"].(string)
		if _, isObj := m["response"].(map[string]any); !isObj {
			c.mu.Unlock()
			ok := c.invalid("toolResponse.functionResponses[%d].response must be an object.", i)
			c.mu.Lock()
			return ok
		}
		if !c.calls.answer(id) {
			c.f.violation("functionResponse for unknown or answered call %q", id)
		}
	}
	c.calls.settle()
	return true
}
