package synth

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The bank voice says the variant the selector picks, from its rendered file; a repeat of the plan
// moves to the next variant; a plan without audio is an error unless rendering is allowed.
func TestBankVoice(t *testing.T) {
	tk := loadTasks(t, "it-vpn-incident")[0]
	tk.Bank = map[string][]string{"open": {"Hi, my VPN is down.", "Hello, I can't get on the VPN.", "Hey, VPN trouble here."}}
	dir := t.TempDir()
	for i := range tk.Bank["open"] {
		p := filepath.Join(dir, bank.FileName(bank.Variant{Task: tk.ID, Plan: "open", Variant: i + 1}))
		os.MkdirAll(filepath.Dir(p), 0o755)
		// Variant i is i+1 samples of value 1000·(i+1), so the test can tell which file was read.
		pcm := make([]int16, i+1)
		for j := range pcm {
			pcm[j] = int16(1000 * (i + 1))
		}
		if err := audio.WriteWAV(p, audio.RecordRate, 1, pcm); err != nil {
			t.Fatal(err)
		}
	}
	const seed = 7
	first := bank.Select(tk.ID, seed, "open", 3)
	v := &BankVoice{Task: tk, Seed: seed, Dir: dir}
	open := trace.Plan{ID: "open", Kind: trace.PlanOpen}
	for k := range 4 { // the fourth repeat wraps around
		want := (first + k) % 3
		text, src, pcm, err := v.Speak(context.Background(), open)
		if err != nil {
			t.Fatal(err)
		}
		if text != tk.Bank["open"][want] || src != SourceBank || len(pcm) != want+1 || pcm[0] != int16(1000*(want+1)) {
			t.Errorf("say %d: %q %s %v, want variant %d", k, text, src, pcm, want+1)
		}
	}
	// Another seed spreads over the variants: across many seeds every variant is chosen.
	seen := map[int]bool{}
	for s := range int64(40) {
		seen[bank.Select(tk.ID, s, "open", 3)] = true
	}
	if len(seen) != 3 {
		t.Errorf("40 seeds chose variants %v", seen)
	}

	close := trace.Plan{ID: "close", Kind: trace.PlanClose}
	if _, _, _, err := (&BankVoice{Task: tk, Seed: seed, Dir: dir}).Speak(context.Background(), close); !errors.Is(err, ErrNoBankAudio) {
		t.Errorf("plan without audio: %v, want ErrNoBankAudio", err)
	}
	// A file at the wrong rate is refused, not played at the wrong speed.
	bad := filepath.Join(dir, bank.FileName(bank.Variant{Task: tk.ID, Plan: "open", Variant: first + 1}))
	audio.WriteWAV(bad, 16000, 1, []int16{1, 2, 3})
	if _, _, _, err := (&BankVoice{Task: tk, Seed: seed, Dir: dir}).Speak(context.Background(), open); err == nil {
		t.Errorf("16 kHz bank file accepted")
	}

	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	text, src, pcm, err := (&BankVoice{Task: tk, Seed: seed, Dir: dir, Render: &Flite{}}).Speak(context.Background(), close)
	if err != nil || src != SourceRender || text == "" || len(pcm) < audio.RecordRate/4 {
		t.Errorf("rendered close: %q %s %d samples %v", text, src, len(pcm), err)
	}
}
