// Package libopus is the tree's only C codec, libopus through cgo: the encoder of the agent's
// audio (through pion/mediadevices, which bundles a static libopus, so no system library is
// needed) and a decoder of the participant's audio on the same library. It is a leaf: the media
// engine takes its codecs through media.CallConfig.NewEncoder and NewDecoder, so the packages that
// run the engine, read audio or serve pages stay pure Go and only the command (and the tests that
// make real calls) link it.
package libopus

import (
	"fmt"

	"github.com/pion/mediadevices/pkg/codec"
	mdopus "github.com/pion/mediadevices/pkg/codec/opus"
	"github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"

	pcm "github.com/voicebench/humanaudit/internal/audio"
)

// BlockSamples is the block Encode takes: 20 ms of mono PCM at audio.RecordRate.
const BlockSamples = pcm.RecordRate / 50

// Encoder is one libopus encoder (20 ms frames, VoIP application, 24 kHz mono in). Not safe for
// concurrent use.
type Encoder struct {
	enc   codec.ReadCloser
	chunk *wave.Int16Interleaved
}

// NewEncoder returns an encoder at bitrate bits per second.
func NewEncoder(bitrate int) (*Encoder, error) {
	e := &Encoder{chunk: wave.NewInt16Interleaved(wave.ChunkInfo{Len: BlockSamples, Channels: 1, SamplingRate: pcm.RecordRate})}
	params, err := mdopus.NewParams()
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	params.BitRate = bitrate
	params.Latency = mdopus.Latency20ms
	// mediadevices' encoder is pull-based: it reads the block Encode has just set.
	r := audio.ReaderFunc(func() (wave.Audio, func(), error) { return e.chunk, func() {}, nil })
	enc, err := params.BuildAudioEncoder(r, prop.Media{Audio: prop.Audio{SampleRate: pcm.RecordRate, ChannelCount: 1}})
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	e.enc = enc
	return e, nil
}

// Encode turns one block of BlockSamples into an Opus packet, appended to dst[:0].
func (e *Encoder) Encode(dst []byte, block []int16) ([]byte, error) {
	if len(block) != BlockSamples {
		return dst[:0], fmt.Errorf("opus encode: block of %d samples, want %d", len(block), BlockSamples)
	}
	if e.enc == nil {
		return dst[:0], fmt.Errorf("opus encode: encoder closed")
	}
	copy(e.chunk.Data, block)
	pkt, _, err := e.enc.Read()
	if err != nil {
		return dst[:0], fmt.Errorf("opus encode: %w", err)
	}
	return append(dst[:0], pkt...), nil
}

// Close frees the libopus state. Safe to call more than once.
func (e *Encoder) Close() error {
	if e.enc == nil {
		return nil
	}
	err := e.enc.Close()
	e.enc = nil
	return err
}
