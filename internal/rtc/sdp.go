package rtc

import (
	"fmt"
	"strings"

	"github.com/pion/sdp/v3"
)

// maxOfferBytes bounds the offer a client may send; real browser offers are a few kilobytes.
const maxOfferBytes = 64 << 10

// checkOffer validates what this service needs from a participant's offer before handing it to
// WebRTC, so every problem comes back as ErrBadOffer with a message a developer can act on.
func checkOffer(offer string) error {
	if len(offer) == 0 {
		return fmt.Errorf("%w: empty offer, want an SDP offer from RTCPeerConnection.createOffer", ErrBadOffer)
	}
	if len(offer) > maxOfferBytes {
		return fmt.Errorf("%w: offer of %d bytes exceeds %d", ErrBadOffer, len(offer), maxOfferBytes)
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		return fmt.Errorf("%w: not SDP: %v", ErrBadOffer, err)
	}
	var audio, data bool
	for _, m := range sd.MediaDescriptions {
		switch m.MediaName.Media {
		case "audio":
			if m.MediaName.Port.Value == 0 {
				continue // rejected m-line
			}
			if audio {
				continue // the first usable audio m-line is the participant's microphone
			}
			if err := checkAudio(m); err != nil {
				return err
			}
			audio = true
		case "application":
			for _, p := range m.MediaName.Protos {
				if strings.EqualFold(p, "DTLS") || strings.EqualFold(p, "SCTP") {
					data = true
				}
			}
		}
	}
	if !audio {
		return fmt.Errorf("%w: no audio m-line (m=audio) in the offer; add the microphone track before createOffer", ErrBadOffer)
	}
	if !data {
		return fmt.Errorf("%w: no data channel (m=application … webrtc-datachannel) in the offer; call createDataChannel(\"control\") before createOffer", ErrBadOffer)
	}
	return nil
}

func checkAudio(m *sdp.MediaDescription) error {
	for _, a := range m.Attributes {
		switch a.Key {
		case "recvonly", "inactive":
			return fmt.Errorf("%w: the audio m-line is %s; the participant's microphone must be sent (want sendrecv)", ErrBadOffer, a.Key)
		}
	}
	for _, a := range m.Attributes {
		if a.Key != "rtpmap" {
			continue
		}
		// a=rtpmap:111 opus/48000/2
		if _, codec, ok := strings.Cut(a.Value, " "); ok && strings.HasPrefix(strings.ToLower(codec), "opus/48000") {
			return nil
		}
	}
	return fmt.Errorf("%w: the audio m-line offers no Opus (want a=rtpmap:<pt> opus/48000/2)", ErrBadOffer)
}
