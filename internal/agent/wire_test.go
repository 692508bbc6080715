package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestClampVoice(t *testing.T) {
	ga := []string{"alloy", "marin", "cedar"}
	tests := []struct {
		name, req, want string
		sub             bool
	}{
		{"known voice kept", "cedar", "cedar", false},
		{"case folded to list spelling", "Marin", "marin", false},
		{"unknown replaced", "nova", "marin", true},
		{"empty gets default without a substitution", "", "marin", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sub := ClampVoice(tt.req, ga, "marin")
			if got != tt.want || sub != tt.sub {
				t.Fatalf("ClampVoice(%q) = %q, %v; want %q, %v", tt.req, got, sub, tt.want, tt.sub)
			}
		})
	}
}

func TestPCMRoundTrip(t *testing.T) {
	in := []int16{0, 1, -1, 32767, -32768, 1234}
	out, err := DecodePCM(EncodePCM(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("len %d, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Fatalf("sample %d = %d, want %d", i, out[i], in[i])
		}
	}
	if _, err := DecodePCM("AA=="); err == nil { // one byte
		t.Fatal("odd byte count accepted")
	}
}

func TestElideAudio(t *testing.T) {
	audio := EncodePCM(make([]int16, 2400)) // 4800 bytes
	tests := []struct {
		name, in, key, want string
	}{
		{"audio delta replaced by byte count",
			`{"type":"response.output_audio.delta","delta":"` + audio + `","item_id":"item_1"}`, "delta",
			`{"type":"response.output_audio.delta","delta":4800,"item_id":"item_1"}`},
		{"text with spaces kept",
			`{"type":"x","delta":"hello there"}`, "delta", `{"type":"x","delta":"hello there"}`},
		{"spaces around colon and several fields",
			`{"parts":[{"data" : "AAAA"},{"data":"AAA="}]}`, "data", `{"parts":[{"data" : 3},{"data":2}]}`},
		{"key only as value untouched", `{"type":"data","x":"data"}`, "data", `{"type":"data","x":"data"}`},
		{"escaped string kept", `{"delta":"a\"b"}`, "delta", `{"delta":"a\"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(ElideAudio([]byte(tt.in), tt.key))
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("invalid JSON %s", got)
			}
		})
	}
}

func TestBoundRaw(t *testing.T) {
	small := []byte(`{"a":1}`)
	if string(BoundRaw(small)) != string(small) {
		t.Fatal("small event changed")
	}
	big := []byte(`{"text":"` + strings.Repeat("é", MaxRawBytes) + `"}`)
	got := BoundRaw(big)
	if len(got) > MaxRawBytes || !json.Valid(got) {
		t.Fatalf("bounded raw has %d bytes, valid=%v", len(got), json.Valid(got))
	}
	var v struct {
		Truncated int `json:"truncated_bytes"`
	}
	if err := json.Unmarshal(got, &v); err != nil || v.Truncated != len(big) {
		t.Fatalf("truncated_bytes = %d (%v), want %d", v.Truncated, err, len(big))
	}
}
