package session

import (
	"math"
	"strconv"

	"github.com/voicebench/humanaudit/internal/condition"
)

// conditionTap applies the call's listening condition on the media path and measures the clean
// caller's active speech level on the way, so the trace can give the SNR the caller really had
// (the condition's level is set against the nominal -26 dBFS).
type conditionTap struct {
	p      *condition.Processor
	energy float64 // sum of squares over active frames (media tick goroutine only)
	active int64   // samples in active frames
}

// activeFloor is the level (dBFS) above which a 40 ms frame counts as caller speech.
const activeFloor = -50.0

func (t *conditionTap) Condition(pcm []int16, first int64) {
	var e float64
	for _, v := range pcm {
		e += float64(v) * float64(v)
	}
	if len(pcm) > 0 && 10*math.Log10(e/float64(len(pcm))/(32768*32768)+1e-12) > activeFloor {
		t.energy += e
		t.active += int64(len(pcm))
	}
	t.p.Condition(pcm, first)
}

// report adds the caller's measured speech level and the effective SNR to media.stats (read after
// the media engine stopped).
func (t *conditionTap) report(m map[string]string) {
	if t.active == 0 {
		m["caller_speech_dbfs"] = ""
		return
	}
	level := 10 * math.Log10(t.energy/float64(t.active)/(32768*32768))
	m["caller_speech_dbfs"] = strconv.FormatFloat(level, 'f', 2, 64)
	if spec := t.p.Spec(); spec.Noise != "" {
		noise := condition.ReferenceLevel - spec.SNR
		m["condition_effective_snr_db"] = strconv.FormatFloat(level-noise, 'f', 2, 64)
	}
}
