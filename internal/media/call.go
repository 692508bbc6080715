package media

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// CallerInput says where a call's caller channel comes from.
type CallerInput int

const (
	// CallerRTP: a participant's Opus over WebRTC, through ReceiveCallerRTP.
	CallerRTP CallerInput = iota
	// CallerPCM: a synthetic caller's 24 kHz PCM, through PushCallerPCM (no browser).
	CallerPCM
)

// String names the input for logs and stats ("rtp", "pcm").
func (i CallerInput) String() string {
	if i == CallerPCM {
		return "pcm"
	}
	return "rtp"
}

// Defaults of CallConfig.
const (
	DefaultJitterMargin = 3 * time.Millisecond
	DefaultOpusBitrate  = 32000
	// LateTickThreshold: a tick that starts this much after its due time counts as late.
	LateTickThreshold = 10 * time.Millisecond
)

// ParticipantLink is where the engine sends the agent's audio: the participant's WebRTC peer
// (rtc.Peer implements it). WriteAgentOpus is called from the media tick and must not block.
type ParticipantLink interface {
	// WriteAgentOpus sends one 20 ms Opus packet; rtpTimestamp (48 kHz) is derived from media time.
	WriteAgentOpus(payload []byte, rtpTimestamp uint32) error
}

// CallConfig configures a Call. AgentRate is required, and NewEncoder for a participant's call.
type CallConfig struct {
	// AgentRate is the sample rate of the caller frames delivered to the agent: 16000 or 24000.
	AgentRate int
	// RecordingPath is the stereo WAV to write (24 kHz, left = caller, right = agent); "" records
	// nothing (benchmarks, tools).
	RecordingPath string
	// Clock paces the call; nil uses a RealClock started by NewCall. The Call stops it on Close.
	Clock MediaClock
	// Logger receives warnings (decode errors, late ticks); nil discards.
	Logger *slog.Logger
	// CallerInput selects the caller's source; the zero value is CallerRTP.
	CallerInput CallerInput
	// CallerEndpointer and AgentEndpointer tune speech detection on each channel.
	CallerEndpointer, AgentEndpointer audio.EndpointerConfig
	// JitterMargin is how long before its tick a caller frame should be complete: the slack a
	// packet has before it counts as late and its 20 ms are lost to silence. The clock is
	// phase-locked to the caller's packets to keep that slack (default 3 ms); a late packet widens
	// it at once (by at most half a tick), and it narrows again by 5 ms a second (half of a large
	// surplus). Complete frames reach the agent as soon as their last packet arrives, so the
	// margin costs the agent no latency; it is how much earlier than its recorded tick the agent
	// may hear a frame.
	JitterMargin time.Duration
	// OpusBitrate of the agent's audio toward the participant (default 32000).
	OpusBitrate int
	// NewEncoder makes the encoder of the agent's audio toward the participant:
	// media.Encoders(libopus.NewEncoder). A participant's call (CallerRTP) needs it; a synthetic
	// call without it cannot attach a participant.
	NewEncoder func(bitrate int) (Encoder, error)
	// NewDecoder makes the decoder of the participant's Opus: nil for the pure-Go pion decoder,
	// media.Decoders(libopus.NewDecoder) for libopus, which takes about half the CPU.
	NewDecoder func() (Decoder, error)
	// OnCallerFrame receives each caller frame at the agent's rate. It must not block; PCM is
	// reused after it returns. It may call PushAgentAudio and FlushAgent, not Close nor anything
	// else that takes the caller side's lock (see Lock order in the package documentation).
	OnCallerFrame func(CallerFrame)
	// OnEvent receives speech, stream, gap and late-tick events. Same rules as OnCallerFrame.
	// The engine never runs two callbacks at once.
	OnEvent func(Event)
}

// CallerFrame is one tick's caller audio as the agent receives it.
type CallerFrame struct {
	Tick int64 // the tick whose recording holds this audio (left channel)
	// Start is the media time of PCM[0]: Tick·40 ms, minus the resampler's fixed delay when the
	// agent takes 16 kHz (the audio is that much older than the tick it is delivered at).
	Start     time.Duration
	Rate      int       // the agent's input rate, 16000 or 24000
	PCM       []int16   // 40 ms at Rate; valid only during the callback
	Concealed int       // samples (24 kHz) of missing caller audio filled with silence
	Delivered time.Time // wall time the frame was handed to the agent
	// Due is the wall time the frame's tick is due: the recording's frame starts there.
	Due time.Time
	// Completed is the arrival of the packet that completed the frame (zero when the frame had
	// missing audio or came from a synthetic caller); Due - Completed is its jitter-buffer delay.
	Completed time.Time
}

// Call is the media engine of one session: one MediaClock, the caller's audio in (RTP through a
// jitter buffer, or PCM from a synthetic caller), one 40 ms frame per tick to the agent (as soon as
// its packets are in, at the latest at its tick), the agent's PCM paced out as Opus (one 20 ms
// packet at the tick, one at the half tick), and both channels recorded from the same tick. The
// participant's peer can be attached, detached and replaced while the call runs.
//
// Its state is in three parts, each with one owner: the caller side (caller.go, under caller.mu),
// the agent side (agent.go, under agent.mu) and the tick (tick.go, the tick goroutine's alone). The
// order the locks are taken in is in the package documentation.
type Call struct {
	cfg      CallConfig
	log      *slog.Logger
	clock    MediaClock
	rec      *audio.Recorder
	resample *audio.Resampler // nil when the agent takes 24 kHz
	margin   time.Duration
	manual   bool // driven by a ManualClock: wall times are simulated

	caller callerSide
	agent  agentSide
	tk     tickState

	link atomic.Pointer[linkHolder]

	emitMu sync.Mutex // one callback at a time (OnCallerFrame, OnEvent)

	statsMu sync.Mutex // a leaf: taken under any other lock, never holding one
	stats   Stats
	lat     Latencies

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type linkHolder struct{ link ParticipantLink }

// NewCall validates cfg, opens the recording and starts the media clock.
func NewCall(cfg CallConfig) (*Call, error) {
	if cfg.AgentRate != 16000 && cfg.AgentRate != 24000 {
		return nil, fmt.Errorf("new call: %w: AgentRate = %d, want 16000 or 24000", ErrBadConfig, cfg.AgentRate)
	}
	if cfg.CallerInput != CallerRTP && cfg.CallerInput != CallerPCM {
		return nil, fmt.Errorf("new call: %w: CallerInput = %d", ErrBadConfig, cfg.CallerInput)
	}
	if cfg.JitterMargin < 0 || cfg.JitterMargin > TickDuration {
		return nil, fmt.Errorf("new call: %w: JitterMargin = %v, want 0..%v", ErrBadConfig, cfg.JitterMargin, TickDuration)
	}
	if cfg.JitterMargin == 0 {
		cfg.JitterMargin = DefaultJitterMargin
	}
	if cfg.OpusBitrate == 0 {
		cfg.OpusBitrate = DefaultOpusBitrate
	}
	if cfg.OpusBitrate < 6000 || cfg.OpusBitrate > 510000 {
		return nil, fmt.Errorf("new call: %w: OpusBitrate = %d, want 6000..510000", ErrBadConfig, cfg.OpusBitrate)
	}
	if cfg.NewEncoder == nil && cfg.CallerInput == CallerRTP {
		return nil, fmt.Errorf("new call: %w: NewEncoder is nil; a participant's call needs an Opus encoder (media.Encoders(libopus.NewEncoder))", ErrBadConfig)
	}
	callerEP, err := audio.NewEndpointer(cfg.CallerEndpointer)
	if err != nil {
		return nil, fmt.Errorf("new call: %w: caller endpointer: %w", ErrBadConfig, err)
	}
	agentEP, err := audio.NewEndpointer(cfg.AgentEndpointer)
	if err != nil {
		return nil, fmt.Errorf("new call: %w: agent endpointer: %w", ErrBadConfig, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Call{
		cfg:    cfg,
		log:    log,
		margin: cfg.JitterMargin,
		caller: newCallerSide(callerEP),
		tk:     tickState{ep: agentEP},
		done:   make(chan struct{}),
	}
	c.agent.done.L = &c.agent.mu
	c.stats.CallerInput = cfg.CallerInput.String()
	if cfg.AgentRate != audio.RecordRate {
		if c.resample, err = audio.NewResampler(audio.RecordRate, cfg.AgentRate); err != nil {
			return nil, fmt.Errorf("new call: %w", err)
		}
	}
	if c.caller.jb, err = newJitterBuffer(cfg.NewDecoder); err != nil {
		return nil, fmt.Errorf("new call: %w", err)
	}
	if cfg.NewEncoder != nil {
		enc, err := cfg.NewEncoder(cfg.OpusBitrate)
		if err != nil {
			c.caller.jb.dec.close()
			return nil, fmt.Errorf("new call: opus encoder: %w", err)
		}
		c.agent.enc = newAgentEncoder(enc)
	}
	if cfg.RecordingPath != "" {
		if c.rec, err = newRecorder(cfg.RecordingPath, audio.RecordRate); err != nil {
			c.agent.closeEncoder()
			c.caller.jb.dec.close()
			return nil, fmt.Errorf("new call: %w", err)
		}
	}
	c.clock = cfg.Clock
	if c.clock == nil {
		c.clock = NewRealClock()
	}
	_, c.manual = c.clock.(*ManualClock)
	go c.run()
	return c, nil
}

// newRecorder opens a call's recording (benchmarks swap in another flush interval).
var newRecorder = audio.CreateRecorder

// MediaTime returns the media time reached (the end of the last tick processed).
func (c *Call) MediaTime() time.Duration {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return c.stats.MediaTime
}

// Recording returns the path of the recording ("" when none).
func (c *Call) Recording() string { return c.cfg.RecordingPath }

// AgentRate returns the rate of the caller frames delivered to the agent.
func (c *Call) AgentRate() int { return c.cfg.AgentRate }

// CallerDelay is the fixed delay of the caller audio delivered to the agent relative to the
// recording (the resampler's, when the agent takes 16 kHz).
func (c *Call) CallerDelay() time.Duration {
	if c.resample == nil {
		return 0
	}
	return c.resample.Delay()
}

// now returns the wall time for latency figures: the real time, or with a ManualClock the
// simulated time the test supplied (a tick's due time or a packet's arrival).
func (c *Call) now(simulated time.Time) time.Time {
	if c.manual {
		return simulated
	}
	return time.Now()
}

func (c *Call) emit(ev Event) {
	if c.cfg.OnEvent == nil {
		return
	}
	c.emitMu.Lock()
	defer c.emitMu.Unlock()
	c.cfg.OnEvent(ev)
}

func (c *Call) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close stops the clock, waits for the tick goroutine, finalizes the recording and frees the
// encoder. Safe in any state and more than once; it must not be called from a callback.
func (c *Call) Close() error {
	c.closeOnce.Do(func() {
		c.caller.mu.Lock()
		c.caller.closed = true
		c.caller.mu.Unlock()
		c.clock.Stop()
		<-c.done
		c.link.Store(nil)
		var errs []error
		c.caller.mu.Lock() // the tick has stopped and no packet gets past closed: the decoder is free
		if err := c.caller.jb.dec.close(); err != nil {
			errs = append(errs, fmt.Errorf("close call: caller decoder: %w", err))
		}
		c.caller.mu.Unlock()
		if c.rec != nil {
			if err := c.rec.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close call: %w", err))
			}
		}
		c.agent.mu.Lock()
		for c.agent.encoding {
			c.agent.done.Wait() // libopus must not be freed under an encode ahead
		}
		if err := c.agent.closeEncoder(); err != nil {
			errs = append(errs, fmt.Errorf("close call: %w", err))
		}
		c.agent.mu.Unlock()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
