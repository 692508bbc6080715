package condition

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// Processor applies one condition to one call's caller audio, frame after frame. It is not safe
// for concurrent use (the media tick is its only caller).
//
// The noise is the bed looped from an offset chosen by the seed, so the sample the caller hears
// at media sample n is bed[(offset + n) mod len]: the same for every system and every caller at
// the same condition, task and seed, whatever the call's timing.
type Processor struct {
	spec   Spec
	bed    *Bed
	gain   float64
	offset int64
	phone  *phoneLine
	next   int64 // the media sample the next frame must start at
	buf    []float64
}

// Applied describes what a Processor does, for the trace.
type Applied struct {
	Condition string // canonical spelling ("phone_line+background_tv@10")
	Name      string // without the level
	Level     string // SNR in dB, "" without a noise
	Seed      int64
	// Bed names the noise bed: recipe name, recipe hash and the SHA-256 of its samples; "" without
	// a noise. BedOffset is the sample of the bed heard at media sample 0.
	Bed, BedSHA256 string
	BedOffset      int64
	// NoiseDBFS is the RMS level of the noise as mixed (ReferenceLevel − SNR).
	NoiseDBFS float64
	// DelaySamples is the delay (24 kHz samples) the condition adds to the caller channel.
	DelaySamples int
}

// Meta returns the trace's session.start entries for a condition.
func (a Applied) Meta() map[string]string {
	m := map[string]string{"condition": a.Condition, "condition_name": a.Name, "condition_seed": strconv.FormatInt(a.Seed, 10),
		"condition_delay_samples": strconv.Itoa(a.DelaySamples)}
	if a.Level != "" {
		m["condition_level_db"] = a.Level
		m["condition_bed"] = a.Bed
		m["condition_bed_sha256"] = a.BedSHA256
		m["condition_bed_offset"] = strconv.FormatInt(a.BedOffset, 10)
		m["condition_noise_dbfs"] = strconv.FormatFloat(a.NoiseDBFS, 'f', 2, 64)
	}
	return m
}

// NewProcessor prepares spec for one call. bed is the noise bed of spec.Noise (nil without a
// noise); seed picks where in the bed the call starts.
func NewProcessor(spec Spec, bed *Bed, seed int64) (*Processor, error) {
	p := &Processor{spec: spec}
	if spec.Noise != "" {
		if bed == nil || bed.Recipe.Name != spec.Noise || len(bed.PCM) == 0 {
			return nil, fmt.Errorf("condition %s: no %s noise bed", spec, spec.Noise)
		}
		p.bed = bed
		target := ReferenceLevel - spec.SNR
		p.gain = math.Pow(10, (target-bed.RMSDBFS)/20)
		p.offset = BedOffset(bed, seed)
	}
	if spec.Phone {
		p.phone = newPhoneLine()
	}
	return p, nil
}

// BedOffset is where in bed a call with seed starts: a hash of the bed's samples and the seed, so
// it is the same wherever the same bed is used.
func BedOffset(bed *Bed, seed int64) int64 {
	h := sha256.New()
	h.Write([]byte(bed.SHA256))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	sum := h.Sum(nil)
	return int64(binary.LittleEndian.Uint64(sum[:8]) % uint64(len(bed.PCM)))
}

// Applied describes the processor.
func (p *Processor) Applied(seed int64) Applied {
	a := Applied{Condition: p.spec.String(), Name: p.spec.Name(), Level: p.spec.Level(), Seed: seed}
	if p.bed != nil {
		a.Bed = p.bed.ID()
		a.BedSHA256 = p.bed.SHA256
		a.BedOffset = p.offset
		a.NoiseDBFS = ReferenceLevel - p.spec.SNR
	}
	if p.phone != nil {
		a.DelaySamples = PhoneDelay
	}
	return a
}

// Spec returns the condition.
func (p *Processor) Spec() Spec { return p.spec }

// Condition changes one frame of caller audio (24 kHz) in place: the noise of media samples
// first … first+len−1 is added, then the telephone line. Frames must follow each other without a
// gap (first is the previous frame's end); a gap resets nothing but is caught as an error in
// tests through Next.
func (p *Processor) Condition(pcm []int16, first int64) {
	if p.spec.Quiet() {
		return
	}
	if cap(p.buf) < len(pcm) {
		p.buf = make([]float64, len(pcm))
	}
	x := p.buf[:len(pcm)]
	for i, s := range pcm {
		x[i] = float64(s)
	}
	if p.bed != nil {
		n := int64(len(p.bed.PCM))
		j := (p.offset + first) % n
		for i := range x {
			x[i] += p.gain * float64(p.bed.PCM[j])
			j++
			if j == n {
				j = 0
			}
		}
	}
	if p.phone != nil {
		p.phone.process(x)
	}
	for i, v := range x {
		pcm[i] = clip16(v)
	}
	p.next = first + int64(len(pcm))
}

// Next is the media sample the next frame should start at.
func (p *Processor) Next() int64 { return p.next }

// SeedFor is the condition seed of a call of task with seed (the synthetic run's seed, or the
// human session's repeat): every system called for the same task, seed and condition hears the
// same stretch of the bed, and different tasks hear different stretches.
func SeedFor(taskID string, seed int64) int64 {
	h := sha256.New()
	h.Write([]byte(taskID))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)[:8]) >> 1)
}
