// Package libopus is the tree's only C codec, libopus through cgo: an encoder of the agent's
// audio and a decoder of the participant's audio. The library is the static libopus that
// pion/mediadevices bundles (imported below for its link flags), so no system library is needed.
// It is a leaf: the media engine takes its codecs through media.CallConfig.NewEncoder and
// NewDecoder, so the packages that run the engine, read audio or serve pages stay pure Go and only
// the command (and the tests that make real calls) link it.
package libopus

/*
#include <stdint.h>

// The encoder half of libopus's API (opus.h), declared here like the decoder's.
typedef struct OpusEncoder OpusEncoder;
OpusEncoder *opus_encoder_create(int32_t Fs, int channels, int application, int *error);
int32_t opus_encode(OpusEncoder *st, const int16_t *pcm, int frame_size, unsigned char *data, int32_t max_data_bytes);
int opus_encoder_ctl(OpusEncoder *st, int request, ...);
void opus_encoder_destroy(OpusEncoder *st);
const char *opus_strerror(int error);

// opus_defines.h: OPUS_APPLICATION_VOIP and the setters used, wrapped because cgo cannot make a
// variadic call.
enum { humanaudit_opus_application_voip = 2048 };
static int humanaudit_opus_set_bitrate(OpusEncoder *st, int32_t v) { return opus_encoder_ctl(st, 4002, v); }
static int humanaudit_opus_set_complexity(OpusEncoder *st, int32_t v) { return opus_encoder_ctl(st, 4010, v); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	_ "github.com/pion/mediadevices/pkg/codec/opus" // links the bundled static libopus

	pcm "github.com/voicebench/humanaudit/internal/audio"
)

// BlockSamples is the block Encode takes: 20 ms of mono PCM at audio.RecordRate.
const BlockSamples = pcm.RecordRate / 50

// Complexity is the encoder's complexity (libopus 0-10, default 10). The agent's audio is mono
// speech at 24 kHz and 32 kb/s; WebRTC sends the same at 9 on desktops and 5 on phones. At 7 an
// encode costs about three quarters of one at 10 (BenchmarkEncodeByComplexity), the largest single
// cost of a session, and the voice is as clean (TestComplexityKeepsTheVoice); below 7 the packets
// after a barge-in's cut ring at up to -31 dBFS (at 5), which TestBargeInStopsAgentAudioAtTheBrowser
// refuses. The recording is unaffected: it keeps the PCM, not the packets.
const Complexity = 7

// maxPacket bounds one 20 ms packet: at 32 kb/s a packet is about 80 bytes; libopus never writes
// more than it is given room for.
const maxPacket = 1276

// Encoder is one libopus encoder (20 ms frames, VoIP application, 24 kHz mono in).
// Encode allocates nothing once dst has room for a packet. Not safe for concurrent use.
type Encoder struct {
	enc *C.OpusEncoder
}

// NewEncoder returns an encoder at bitrate bits per second.
func NewEncoder(bitrate int) (*Encoder, error) { return newEncoder(bitrate, Complexity) }

func newEncoder(bitrate, complexity int) (*Encoder, error) {
	var cerr C.int
	enc := C.opus_encoder_create(C.int32_t(pcm.RecordRate), 1, C.humanaudit_opus_application_voip, &cerr)
	if cerr != 0 || enc == nil {
		return nil, fmt.Errorf("opus encoder: %s", C.GoString(C.opus_strerror(cerr)))
	}
	for _, set := range []struct {
		what string
		r    C.int
	}{
		{fmt.Sprintf("bitrate %d", bitrate), C.humanaudit_opus_set_bitrate(enc, C.int32_t(bitrate))},
		{fmt.Sprintf("complexity %d", complexity), C.humanaudit_opus_set_complexity(enc, C.int32_t(complexity))},
	} {
		if set.r != 0 {
			C.opus_encoder_destroy(enc)
			return nil, fmt.Errorf("opus encoder: %s: %s", set.what, C.GoString(C.opus_strerror(set.r)))
		}
	}
	return &Encoder{enc: enc}, nil
}

// Encode turns one block of BlockSamples into an Opus packet, written into dst's storage when it
// has room (appended to dst[:0]).
func (e *Encoder) Encode(dst []byte, block []int16) ([]byte, error) {
	if len(block) != BlockSamples {
		return dst[:0], fmt.Errorf("opus encode: block of %d samples, want %d", len(block), BlockSamples)
	}
	if e.enc == nil {
		return dst[:0], fmt.Errorf("opus encode: encoder closed")
	}
	if cap(dst) < maxPacket {
		dst = make([]byte, 0, maxPacket)
	}
	out := dst[:maxPacket]
	n := C.opus_encode(e.enc, (*C.int16_t)(unsafe.Pointer(&block[0])), C.int(BlockSamples),
		(*C.uchar)(unsafe.Pointer(&out[0])), C.int32_t(len(out)))
	if n < 0 {
		return dst[:0], fmt.Errorf("opus encode: %s", C.GoString(C.opus_strerror(C.int(n))))
	}
	return out[:n], nil
}

// Close frees the libopus state. Safe to call more than once.
func (e *Encoder) Close() error {
	if e.enc != nil {
		C.opus_encoder_destroy(e.enc)
		e.enc = nil
	}
	return nil
}
