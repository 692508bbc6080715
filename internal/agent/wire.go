package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ClampVoice returns the allowed voice matching requested (case-insensitively, in the allow-list's
// spelling), or fallback when requested is empty or unknown; substituted reports a replacement of
// a non-empty request. Providers reject a whole session update for an unknown voice, tools included.
func ClampVoice(requested string, allowed []string, fallback string) (voice string, substituted bool) {
	if len(allowed) == 0 {
		if requested == "" {
			return fallback, false
		}
		return requested, false
	}
	for _, v := range allowed {
		if strings.EqualFold(v, requested) {
			return v, false
		}
	}
	return fallback, requested != ""
}

// EncodePCM returns PCM16 samples as base64 of little-endian bytes, the audio encoding of every
// realtime protocol.
func EncodePCM(pcm []int16) string {
	b := make([]byte, 2*len(pcm))
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodePCM decodes base64 little-endian PCM16. An odd byte count is a protocol error.
func DecodePCM(b64 string) ([]int16, error) {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("decode audio: %w", err)
	}
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("decode audio: odd byte count %d", len(b))
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm, nil
}

// ElideAudio returns a copy of the JSON message raw in which every string value of a field named
// key that is pure base64 is replaced by its decoded byte count, so that traces keep the event but
// not the audio. Call it only on messages known to carry audio in that field (the field name alone
// is ambiguous: "delta" is audio in one event and text in another). raw is not modified.
func ElideAudio(raw []byte, key string) []byte {
	pat := []byte(`"` + key + `"`)
	var out []byte
	last := 0
	for i := 0; i < len(raw); {
		j := bytes.Index(raw[i:], pat)
		if j < 0 {
			break
		}
		j += i
		k := j + len(pat)
		for k < len(raw) && isSpace(raw[k]) {
			k++
		}
		if k >= len(raw) || raw[k] != ':' {
			i = j + len(pat)
			continue
		}
		k++
		for k < len(raw) && isSpace(raw[k]) {
			k++
		}
		if k >= len(raw) || raw[k] != '"' {
			i = k
			continue
		}
		start := k + 1
		end := start
		for end < len(raw) && isBase64(raw[end]) {
			end++
		}
		if end >= len(raw) || raw[end] != '"' {
			i = end // not pure base64 (text with spaces or escapes): keep it
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(raw)-(end-start)+16)
		}
		out = append(out, raw[last:k]...)
		out = strconv.AppendInt(out, int64(base64Len(raw[start:end])), 10)
		last = end + 1
		i = last
	}
	if out == nil {
		return bytes.Clone(raw)
	}
	return append(out, raw[last:]...)
}

// BoundRaw returns raw if it is at most MaxRawBytes, and otherwise a small JSON object holding the
// original size and a prefix, so that an oversized provider event can neither bloat nor break the
// trace (the result is always valid JSON when raw is).
func BoundRaw(raw []byte) json.RawMessage {
	if len(raw) <= MaxRawBytes {
		return raw
	}
	prefix := string(raw[:MaxRawBytes/8]) // escaping can grow it up to 6x
	b, _ := json.Marshal(struct {
		Truncated int    `json:"truncated_bytes"`
		Prefix    string `json:"prefix"`
	}{len(raw), strings.ToValidUTF8(prefix, "")})
	return b
}

func base64Len(s []byte) int {
	n := len(s) / 4 * 3
	if len(s) >= 1 && s[len(s)-1] == '=' {
		n--
	}
	if len(s) >= 2 && s[len(s)-2] == '=' {
		n--
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
