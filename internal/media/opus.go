package media

import (
	"errors"
	"fmt"

	"github.com/pion/mediadevices/pkg/codec"
	mdopus "github.com/pion/mediadevices/pkg/codec/opus"
	"github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"
	"github.com/pion/opus"
)

// Opus on the wire: the RTP clock is always 48 kHz whatever the audio bandwidth (RFC 7587).
const (
	opusRTPRate        = 48000
	opusPacketDuration = 20 // ms per packet we send
	// RecordRate is the sample rate of the recording, of the decoded caller audio and of the agent
	// audio the engine accepts and encodes (every realtime agent API emits 24 kHz PCM16).
	RecordRate = 24000
	// FrameSamples is one tick of audio at RecordRate.
	FrameSamples  = RecordRate / 25                        // 40 ms
	packetSamples = RecordRate * opusPacketDuration / 1000 // 480
	rtpPerSample  = opusRTPRate / RecordRate               // 2 RTP ticks per recorded sample
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

// opusDecoder decodes the caller's Opus at RecordRate with the pure-Go pion decoder.
type opusDecoder struct {
	dec opus.Decoder
	buf []int16 // scratch for one packet (up to 120 ms)
}

func newOpusDecoder() (*opusDecoder, error) {
	d, err := opus.NewDecoderWithOutput(RecordRate, 1)
	if err != nil {
		return nil, fmt.Errorf("opus decoder: %w", err)
	}
	return &opusDecoder{dec: d, buf: make([]int16, RecordRate*120/1000)}, nil
}

// decode returns the packet's samples (valid until the next call). Caller packets come from the
// network, so a decoder panic on a malformed packet is turned into an error, never a crash.
func (d *opusDecoder) decode(p []byte) (pcm []int16, err error) {
	defer func() {
		if r := recover(); r != nil {
			pcm, err = nil, fmt.Errorf("opus decode: malformed packet: %v", r)
		}
	}()
	n, err := d.dec.DecodeToInt16(p, d.buf)
	if err != nil {
		return nil, fmt.Errorf("opus decode: %w", err)
	}
	return d.buf[:n], nil
}

// reset starts a new stream (a new SSRC after a reload).
func (d *opusDecoder) reset() error {
	return d.dec.Init(RecordRate, 1)
}

// silencePeak is the largest sample magnitude (about -66 dBFS) of a 20 ms block the encoder treats
// as silence: after a few encoded silent blocks it resends the last one instead of running libopus.
const (
	silencePeak       = 16
	silenceWarmBlocks = 3
)

// opusEncoder encodes the agent's 24 kHz PCM into 20 ms Opus packets with libopus through
// pion/mediadevices (pull-based: it reads the block set by encode from an audio.Reader). When the
// agent is quiet it stops running the encoder and repeats its own last silent packet: libopus costs
// about 0.3 ms per packet on this class of machine, the largest share of a session's CPU.
type opusEncoder struct {
	enc   codec.ReadCloser
	chunk *wave.Int16Interleaved

	silentRun int
	silence   []byte // the packet libopus made for the last warm silent block
	encoded   int64  // packets produced by libopus
	repeated  int64  // silent packets repeated without encoding
}

func newOpusEncoder(bitrate int) (*opusEncoder, error) {
	e := &opusEncoder{chunk: wave.NewInt16Interleaved(wave.ChunkInfo{Len: packetSamples, Channels: 1, SamplingRate: RecordRate})}
	params, err := mdopus.NewParams()
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	params.BitRate = bitrate
	params.Latency = mdopus.Latency20ms
	r := audio.ReaderFunc(func() (wave.Audio, func(), error) { return e.chunk, func() {}, nil })
	enc, err := params.BuildAudioEncoder(r, prop.Media{Audio: prop.Audio{SampleRate: RecordRate, ChannelCount: 1}})
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	e.enc = enc
	return e, nil
}

// encode turns one 20 ms block (packetSamples) into an Opus packet. The returned slice is owned
// by the caller until the next call only when it is the repeated silence packet; otherwise it is
// freshly allocated by the encoder.
func (e *opusEncoder) encode(pcm []int16) ([]byte, error) {
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
			e.repeated++
			return e.silence, nil
		}
	}
	copy(e.chunk.Data, pcm)
	pkt, _, err := e.enc.Read()
	if err != nil {
		return nil, fmt.Errorf("opus encode: %w", err)
	}
	e.encoded++
	if silent && e.silentRun == silenceWarmBlocks {
		e.silence = pkt
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
