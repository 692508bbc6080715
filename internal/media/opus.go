package media

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pion/opus"

	"github.com/voicebench/humanaudit/internal/audio"
)

// Opus on the wire: the RTP clock is always 48 kHz whatever the audio bandwidth (RFC 7587).
const (
	opusRTPRate        = 48000
	opusPacketDuration = 20                                           // ms per packet we send
	packetSamples      = audio.RecordRate * opusPacketDuration / 1000 // 480
	rtpPerSample       = opusRTPRate / audio.RecordRate               // 2 RTP ticks per recorded sample
)

var errOpusTOC = errors.New("opus packet: bad table of contents")

// opusPacketDuration48 returns a packet's duration in 48 kHz samples from its table-of-contents
// byte(s) (RFC 6716 §3.1), without decoding it.
func opusPacketSamples48(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, errOpusTOC
	}
	cfg := p[0] >> 3
	var frame int // in 48 kHz samples
	switch {
	case cfg < 12: // SILK: 10, 20, 40, 60 ms
		frame = [4]int{480, 960, 1920, 2880}[cfg%4]
	case cfg < 16: // Hybrid: 10, 20 ms
		frame = [2]int{480, 960}[cfg%2]
	default: // CELT: 2.5, 5, 10, 20 ms
		frame = [4]int{120, 240, 480, 960}[cfg%4]
	}
	var frames int
	switch p[0] & 3 {
	case 0:
		frames = 1
	case 1, 2:
		frames = 2
	case 3:
		if len(p) < 2 {
			return 0, errOpusTOC
		}
		frames = int(p[1] & 0x3f)
	}
	n := frame * frames
	if n == 0 || n > 5760 { // 120 ms is the most a packet may hold
		return 0, errOpusTOC
	}
	return n, nil
}

// Decoder turns one caller Opus packet into mono PCM at audio.RecordRate. The engine's default
// is the pure-Go pion decoder; libopus.Decoder decodes the same packets in about half the CPU
// (the console uses it through CallConfig.NewDecoder). Not safe for concurrent use.
type Decoder interface {
	// Decode writes the packet's samples to dst (room for 120 ms) and returns how many.
	Decode(dst []int16, packet []byte) (int, error)
	// Reset starts a new stream (a new SSRC after a reload).
	Reset() error
	Close() error
}

// Decoders adapts a constructor of a concrete Decoder to CallConfig.NewDecoder.
func Decoders[D Decoder](newDecoder func() (D, error)) func() (Decoder, error) {
	return func() (Decoder, error) {
		d, err := newDecoder()
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// pionDecoder is the pure-Go decoder, the default.
type pionDecoder struct{ dec opus.Decoder }

func newPionDecoder() (Decoder, error) {
	d, err := opus.NewDecoderWithOutput(audio.RecordRate, 1)
	if err != nil {
		return nil, err
	}
	return &pionDecoder{dec: d}, nil
}

func (d *pionDecoder) Decode(dst []int16, p []byte) (int, error) { return d.dec.DecodeToInt16(p, dst) }
func (d *pionDecoder) Reset() error                              { return d.dec.Init(audio.RecordRate, 1) }
func (d *pionDecoder) Close() error                              { return nil }

// opusDecoder decodes the caller's Opus at audio.RecordRate into a buffer it reuses.
type opusDecoder struct {
	dec Decoder
	buf []int16 // scratch for one packet (up to 120 ms)
}

func newOpusDecoder(newDecoder func() (Decoder, error)) (*opusDecoder, error) {
	if newDecoder == nil {
		newDecoder = newPionDecoder
	}
	d, err := newDecoder()
	if err != nil {
		return nil, fmt.Errorf("opus decoder: %w", err)
	}
	return &opusDecoder{dec: d, buf: make([]int16, audio.RecordRate*120/1000)}, nil
}

// decode returns the packet's samples (valid until the next call). Caller packets come from the
// network, so a decoder panic on a malformed packet is turned into an error, never a crash.
func (d *opusDecoder) decode(p []byte) (pcm []int16, err error) {
	defer func() {
		if r := recover(); r != nil {
			pcm, err = nil, fmt.Errorf("opus decode: malformed packet: %v", r)
		}
	}()
	n, err := d.dec.Decode(d.buf, p)
	if err != nil {
		return nil, fmt.Errorf("opus decode: %w", err)
	}
	return d.buf[:n], nil
}

// reset starts a new stream (a new SSRC after a reload).
func (d *opusDecoder) reset() error { return d.dec.Reset() }

// close frees the decoder.
func (d *opusDecoder) close() error { return d.dec.Close() }

// Encoder turns one 20 ms block of the agent's audio (480 samples at audio.RecordRate, mono) into an
// Opus packet appended to dst[:0]. libopus.Encoder is the one the console uses; it is cgo, so the
// engine takes it from CallConfig.NewEncoder and whatever links media alone stays pure Go.
type Encoder interface {
	Encode(dst []byte, block []int16) ([]byte, error)
	Close() error
}

// Encoders adapts the constructor of a concrete encoder type (libopus.NewEncoder) to
// CallConfig.NewEncoder.
func Encoders[E Encoder](newEncoder func(bitrate int) (E, error)) func(bitrate int) (Encoder, error) {
	return func(bitrate int) (Encoder, error) {
		e, err := newEncoder(bitrate)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}

// silencePeak is the largest sample magnitude (about -66 dBFS) of a 20 ms block the encoder treats
// as silence: after a few encoded silent blocks it resends the last one instead of running libopus.
const (
	silencePeak       = 16
	silenceWarmBlocks = 3
)

// opusEncoder encodes the agent's 24 kHz PCM into 20 ms Opus packets with an Encoder. When the
// agent is quiet it stops running the encoder and repeats its own last silent packet: libopus costs
// about 0.1 ms per packet, the largest share of a session's CPU. Only one goroutine uses it at a
// time (the agent side's encoding flag, or its lock); the counters may be read at any time.
type opusEncoder struct {
	enc Encoder

	silentRun int
	silence   []byte       // the packet the encoder made for the last warm silent block
	encoded   atomic.Int64 // packets produced by the encoder
	repeated  atomic.Int64 // silent packets repeated without encoding
}

func newAgentEncoder(enc Encoder) *opusEncoder { return &opusEncoder{enc: enc} }

// encode turns one 20 ms block (packetSamples) into an Opus packet appended to dst[:0].
func (e *opusEncoder) encode(dst []byte, pcm []int16) ([]byte, error) {
	silent := true
	for _, s := range pcm {
		if s > silencePeak || s < -silencePeak {
			silent = false
			break
		}
	}
	if !silent {
		e.silentRun = 0
	} else {
		e.silentRun++
		if e.silentRun > silenceWarmBlocks && e.silence != nil {
			e.repeated.Add(1)
			return append(dst[:0], e.silence...), nil
		}
	}
	pkt, err := e.enc.Encode(dst, pcm)
	if err != nil {
		return pkt, err
	}
	e.encoded.Add(1)
	if silent && e.silentRun == silenceWarmBlocks {
		e.silence = append(e.silence[:0], pkt...)
	}
	return pkt, nil
}

func (e *opusEncoder) close() error {
	if e.enc == nil {
		return nil
	}
	err := e.enc.Close()
	e.enc = nil
	return err
}
