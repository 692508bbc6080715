package rtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
)

// Config sets how the server's side of ICE is reachable.
type Config struct {
	// LoopbackOnly limits ICE to UDP over IPv4 on the loopback interface with mDNS off: tests and a
	// console used on the same machine.
	LoopbackOnly bool
	// UDPListen, when set, serves every peer on this one UDP address ("0.0.0.0:3478",
	// "127.0.0.1:0"), so a firewall needs a single open port. Empty: one ephemeral port per peer.
	UDPListen string
	// PublicIPs are advertised instead of the host's own addresses in host candidates (a server
	// behind 1:1 NAT or a forwarded port): pion's ICE address rewrite rules.
	PublicIPs []string
	// Interfaces, when set, limits candidate gathering to these interface names.
	Interfaces []string
	// GatherTimeout bounds the wait for ICE gathering before the answer is returned (default 5 s).
	GatherTimeout time.Duration
	// Logger receives connection events; nil discards.
	Logger *slog.Logger
}

// Endpoint is the server's WebRTC side: one pion API (codecs, RTCP interceptors, ICE settings,
// the shared UDP port) that answers participants' offers with Peers.
type Endpoint struct {
	cfg  Config
	log  *slog.Logger
	api  *webrtc.API
	conn net.PacketConn // the single UDP port, when configured
	mux  ice.UDPMux

	mu     sync.Mutex
	closed bool
	peers  map[*Peer]struct{}
}

// NewEndpoint builds the WebRTC API for cfg and, with UDPListen, binds its UDP port.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	if cfg.GatherTimeout == 0 {
		cfg.GatherTimeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: opusCapability,
		PayloadType:        111,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, fmt.Errorf("rtc endpoint: %w", err)
	}
	// Sender and receiver reports only: RTT and the participant's view of loss and jitter. No NACK
	// or congestion control for a single Opus stream.
	ir := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		return nil, fmt.Errorf("rtc endpoint: %w", err)
	}
	se := webrtc.SettingEngine{}
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	// A participant whose browser vanished without closing (crash, network gone) is declared
	// failed after 10 s rather than pion's 25 s; a reload closes the connection at once anyway.
	se.SetICETimeouts(4*time.Second, 10*time.Second, 2*time.Second)
	ifaces := cfg.Interfaces
	if cfg.LoopbackOnly {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
		se.SetIncludeLoopbackCandidate(true)
		ifaces = []string{"lo"}
	}
	if len(ifaces) > 0 {
		se.SetInterfaceFilter(func(name string) bool { return slices.Contains(ifaces, name) })
	}
	if len(cfg.PublicIPs) > 0 {
		for _, ip := range cfg.PublicIPs {
			if net.ParseIP(ip) == nil {
				return nil, fmt.Errorf("rtc endpoint: PublicIPs: %q is not an IP address", ip)
			}
		}
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External:        cfg.PublicIPs,
			AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode:            webrtc.ICEAddressRewriteReplace,
		}); err != nil {
			return nil, fmt.Errorf("rtc endpoint: address rewrite: %w", err)
		}
	}
	e := &Endpoint{cfg: cfg, log: log, peers: map[*Peer]struct{}{}}
	if cfg.UDPListen != "" {
		network := "udp"
		if cfg.LoopbackOnly {
			network = "udp4"
		}
		conn, err := net.ListenPacket(network, cfg.UDPListen)
		if err != nil {
			return nil, fmt.Errorf("rtc endpoint: listen %s: %w", cfg.UDPListen, err)
		}
		e.conn = conn
		e.mux = webrtc.NewICEUDPMux(nil, conn)
		se.SetICEUDPMux(e.mux)
	}
	e.api = webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se))
	return e, nil
}

var opusCapability = webrtc.RTPCodecCapability{
	MimeType:    webrtc.MimeTypeOpus,
	ClockRate:   48000,
	Channels:    2,
	SDPFmtpLine: "minptime=10;useinbandfec=1",
}

// Addr returns the shared UDP port's address, or nil without UDPListen.
func (e *Endpoint) Addr() net.Addr {
	if e.conn == nil {
		return nil
	}
	return e.conn.LocalAddr()
}

// PeerOptions are the per-participant callbacks.
type PeerOptions struct {
	// OnMessage receives each JSON object the browser sends on the DataChannel (cue.shown, …). It
	// runs on the SCTP goroutine: keep it short.
	OnMessage func(Message)
	// Name labels the peer in logs (a session id).
	Name string
	// Tap, when set, receives both channels of the call for experimenters listening in.
	Tap *Tap
}

// Answer validates a participant's SDP offer, creates its Peer and returns the answer with every
// ICE candidate in it (non-trickle). A malformed or unusable offer returns an error wrapping
// ErrBadOffer; the peer is then not created.
func (e *Endpoint) Answer(ctx context.Context, offer string, opts PeerOptions) (*Peer, string, error) {
	if err := checkOffer(offer); err != nil {
		return nil, "", err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, "", ErrClosed
	}
	e.mu.Unlock()
	p, err := newPeer(e, opts)
	if err != nil {
		return nil, "", err
	}
	answer, err := p.negotiate(ctx, offer)
	if err != nil {
		p.Close()
		return nil, "", err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		p.Close()
		return nil, "", ErrClosed
	}
	e.peers[p] = struct{}{}
	e.mu.Unlock()
	return p, answer, nil
}

func (e *Endpoint) forget(p *Peer) {
	e.mu.Lock()
	delete(e.peers, p)
	e.mu.Unlock()
}

// Close closes every peer and then the shared UDP port.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	peers := make([]*Peer, 0, len(e.peers))
	for p := range e.peers {
		peers = append(peers, p)
	}
	e.mu.Unlock()
	var errs []error
	for _, p := range peers {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.mux != nil {
		errs = append(errs, e.mux.Close())
	}
	if e.conn != nil {
		if err := e.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
