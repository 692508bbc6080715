// Package rtc is the participant's WebRTC connection: one non-trickle HTTP offer/answer (the
// answer carries every ICE candidate), one Opus track each way and a DataChannel for role-card
// updates, cues and the browser's acknowledgements. A Peer attaches to a running media.Call: the
// caller's RTP goes into its jitter buffer, the agent's Opus comes out of its tick, and RTCP
// receiver reports feed its link-quality figures. A reloaded page gets a new Peer attached to the
// same Call.
package rtc
