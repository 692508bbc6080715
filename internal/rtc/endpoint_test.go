package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// validOffer is a real offer from the pion test peer (audio sendrecv, Opus, data channel).
func validOffer(t *testing.T) string {
	t.Helper()
	b := newTestPeer(t, browserAPI(t))
	return b.offer()
}

func TestAnswerRejectsBadOffers(t *testing.T) {
	checkLeaks(t)
	e := newLoopbackEndpoint(t, false)
	good := validOffer(t)
	noOpus := regexp.MustCompile(`(?m)^a=rtpmap:111 opus/48000/2\r?\n`).ReplaceAllString(good, "a=rtpmap:111 PCMU/8000\r\n")
	noData := good[:strings.Index(good, "m=application")]
	recvOnly := strings.Replace(good, "a=sendrecv", "a=recvonly", 1)
	noAudio := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n"
	badFingerprint := regexp.MustCompile(`(?m)^a=fingerprint:.*\r?\n`).ReplaceAllString(good, "")
	for _, c := range []struct {
		name, offer, want string
	}{
		{"empty", "", "empty offer"},
		{"garbage", "hello, this is not SDP", "not SDP"},
		{"binary", "\x00\x01\x02v=0", "not SDP"},
		{"huge", strings.Repeat("a", maxOfferBytes+1), "exceeds"},
		{"no audio", noAudio, "no audio m-line"},
		{"no opus", noOpus, "offers no Opus"},
		{"recvonly microphone", recvOnly, "is recvonly"},
		{"no data channel", noData, "no data channel"},
		{"no fingerprint", badFingerprint, "rejected by WebRTC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, answer, err := e.Answer(context.Background(), c.offer, PeerOptions{})
			if !errors.Is(err, ErrBadOffer) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadOffer mentioning %q", err, c.want)
			}
			if p != nil || answer != "" {
				t.Fatal("a peer was created for a bad offer")
			}
		})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.peers) != 0 {
		t.Fatalf("%d peers left behind", len(e.peers))
	}
}

// FuzzCheckOffer: no input makes offer validation panic.
func FuzzCheckOffer(f *testing.F) {
	f.Add("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n")
	f.Add("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n")
	f.Fuzz(func(t *testing.T, offer string) {
		_ = checkOffer(offer)
	})
}

func TestAnswerIsCompleteAndRewritesAddresses(t *testing.T) {
	checkLeaks(t)
	e, err := NewEndpoint(Config{LoopbackOnly: true, UDPListen: "127.0.0.1:0", PublicIPs: []string{"203.0.113.7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := newTestPeer(t, browserAPI(t))
	p, answer, err := e.Answer(context.Background(), b.offer(), PeerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := e.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	want := fmt.Sprintf(" 203.0.113.7 %s typ host", port)
	if !strings.Contains(answer, want) {
		t.Fatalf("answer lacks the rewritten single-port host candidate %q:\n%s", want, answer)
	}
	if strings.Contains(answer, " 127.0.0.1 ") {
		t.Fatalf("answer still advertises the private address:\n%s", answer)
	}
	if !strings.Contains(answer, "a=end-of-candidates") && !strings.Contains(answer, "a=candidate") {
		t.Fatalf("answer has no candidates (trickle is not supported):\n%s", answer)
	}
	if _, err := NewEndpoint(Config{PublicIPs: []string{"not-an-ip"}}); err == nil {
		t.Fatal("bad public IP accepted")
	}
}

func TestPeerConnectsAndExchangesMessages(t *testing.T) {
	checkLeaks(t)
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single port %v", single), func(t *testing.T) {
			e := newLoopbackEndpoint(t, single)
			var mu sync.Mutex
			var got []Message
			b := newTestPeer(t, browserAPI(t))
			// Queued before the channel is open: delivered once it is.
			p := b.connect(e, PeerOptions{Name: "s1", OnMessage: func(m Message) {
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			}})
			if err := p.Send(map[string]any{"type": "role_card", "goal": "change the address"}); err != nil {
				t.Fatal(err)
			}
			b.sendJSON(map[string]string{"type": "cue.shown", "cue_id": "c1"})
			if err := b.dc.SendText("not json"); err != nil {
				t.Fatal(err)
			}
			b.sendJSON(map[string]string{"type": "cue.acked", "cue_id": "c1"})
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n == 2 && len(b.receivedMessages()) == 1 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 || got[0].Type != "cue.shown" || got[1].Type != "cue.acked" {
				t.Fatalf("server got %+v", got)
			}
			var cue struct {
				CueID string `json:"cue_id"`
			}
			if err := json.Unmarshal(got[0].Raw, &cue); err != nil || cue.CueID != "c1" {
				t.Fatalf("raw message %s", got[0].Raw)
			}
			if msgs := b.receivedMessages(); len(msgs) != 1 || !strings.Contains(msgs[0], `"role_card"`) {
				t.Fatalf("browser got %q", msgs)
			}
			st := p.Stats()
			if st.State != "connected" || st.BadMessages != 1 || !strings.Contains(st.LocalCandidate, "127.0.0.1") {
				t.Fatalf("stats %+v", st)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.Send(map[string]string{"type": "x"}); !errors.Is(err, ErrClosed) {
				t.Fatalf("send after close: %v", err)
			}
			<-p.Done()
			if p.Err() != nil {
				t.Fatalf("normal close reported %v", p.Err())
			}
		})
	}
}

func TestPeerQueuesMessagesUntilTheChannelOpens(t *testing.T) {
	checkLeaks(t)
	e := newLoopbackEndpoint(t, false)
	b := newTestPeer(t, browserAPI(t))
	p, answer, err := e.Answer(context.Background(), b.offer(), PeerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.Send(map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	b.accept(answer)
	deadline := time.Now().Add(10 * time.Second)
	for len(b.receivedMessages()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if msgs := b.receivedMessages(); len(msgs) != 3 || msgs[0] != `{"n":0}` || msgs[2] != `{"n":2}` {
		t.Fatalf("browser got %q, want the three queued messages in order", msgs)
	}
	for range outboxLimit + 1 {
		_ = p.Send(1)
	}
	p.Close()
}
