package audio

import "math"

// RMSDBFS returns the RMS level of pcm in dB full scale (-120 for digital silence).
func RMSDBFS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return -120
	}
	var e float64
	for _, s := range pcm {
		e += float64(s) * float64(s)
	}
	return energyDBFS(e, len(pcm))
}

func energyDBFS(energy float64, n int) float64 {
	if energy <= 0 || n == 0 {
		return -120
	}
	return max(-120, 10*math.Log10(energy/float64(n)/(32768*32768)))
}
