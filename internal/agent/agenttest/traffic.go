package agenttest

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/voicebench/humanaudit/internal/agent"
)

// traffic is what a fake server saw and did, shared by the fakes of every family: the client
// messages received, the upgrade requests, the server messages sent and the protocol misuse
// noticed. Its mutex also guards the embedding fake's own state.
type traffic struct {
	mu         sync.Mutex
	received   []Received
	handshakes []Handshake
	sent       []string
	violations []string
	closes     []string // close frames sent, "1008 reason"
	audioType  string   // the received type whose runs Types collapses
}

// Received returns the client messages received so far.
func (t *traffic) Received() []Received { return snapshot(&t.mu, &t.received) }

// Types returns the types of the client messages received, with runs of audio collapsed.
func (t *traffic) Types() []string {
	var out []string
	for _, r := range t.Received() {
		if r.Type == t.audioType && len(out) > 0 && out[len(out)-1] == r.Type {
			continue
		}
		out = append(out, r.Type)
	}
	return out
}

// Count returns how many client messages of type typ were received.
func (t *traffic) Count(typ string) int { return len(t.of(typ)) }

// Find returns the received messages of type typ, decoded into maps.
func (t *traffic) Find(typ string) []map[string]any {
	var out []map[string]any
	for _, r := range t.of(typ) {
		var m map[string]any
		json.Unmarshal(r.Raw, &m)
		out = append(out, m)
	}
	return out
}

// of returns the client messages of type typ received so far.
func (t *traffic) of(typ string) []Received {
	var out []Received
	for _, r := range t.Received() {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Handshakes returns the upgrade requests seen.
func (t *traffic) Handshakes() []Handshake { return snapshot(&t.mu, &t.handshakes) }

// Sent returns the types of the server messages written (or being written) so far, in order.
func (t *traffic) Sent() []string { return snapshot(&t.mu, &t.sent) }

// Violations lists misuse the real provider answers by stalling rather than with an error (an
// OpenAI response.create before every output of a tool batch, a Gemini activityEnd without
// activityStart).
func (t *traffic) Violations() []string { return snapshot(&t.mu, &t.violations) }

// closeFrames returns the close frames sent so far ("1007 reason").
func (t *traffic) closeFrames() []string { return snapshot(&t.mu, &t.closes) }

// snapshot returns a copy of *s taken under mu: what a fake saw so far, safe from its appends.
func snapshot[T any](mu *sync.Mutex, s *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	return append([]T(nil), *s...)
}

// upgrade records an upgrade request.
func (t *traffic) upgrade(h Handshake) {
	t.mu.Lock()
	t.handshakes = append(t.handshakes, h)
	t.mu.Unlock()
}

// receive records a client message of type typ on connection conn; audioKey, if not empty, is the
// field of caller audio whose base64 is elided from the record.
func (t *traffic) receive(conn int, typ string, data []byte, audioKey string) {
	if audioKey != "" {
		data = agent.ElideAudio(data, audioKey)
	}
	t.mu.Lock()
	t.received = append(t.received, Received{Conn: conn, Type: typ, Raw: data})
	t.mu.Unlock()
}

func (t *traffic) violation(format string, args ...any) {
	t.mu.Lock()
	t.violations = append(t.violations, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}
