// Package media is the per-session media engine of a call: one 40 ms media clock, the caller's
// Opus decoded into a small jitter buffer and delivered as one frame per tick at the agent's input
// rate, the agent's PCM paced out as Opus, both channels written from the same tick to a stereo
// WAV recording (left = caller, right = agent), speech endpointing, levels and link quality.
//
// Everything the session stamps on the trace comes from one clock: tick n covers media time
// [n·40 ms, (n+1)·40 ms), and recording sample i (24 kHz) is media time i/24000 s on both channels.
package media
