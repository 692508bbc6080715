// Package media is the per-session media engine of a call: one 40 ms media clock, the caller's
// Opus decoded into a small jitter buffer and delivered as one frame per tick at the agent's input
// rate, the agent's PCM paced out as Opus, both channels written from the same tick to a stereo
// WAV recording (left = caller, right = agent), speech endpointing, levels and link quality. PCM,
// WAV, resampling and endpointing are package audio's; the libopus encoder is package
// media/libopus, handed in through CallConfig.NewEncoder, so media itself is pure Go.
//
// Everything the session stamps on the trace comes from one clock: tick n covers media time
// [n·40 ms, (n+1)·40 ms), and recording sample i (24 kHz) is media time i/24000 s on both channels.
//
// # Lock order
//
// A Call's state is in three parts, each with one owner:
//
//   - the caller side (caller.go), under caller.mu: the jitter buffer or synthetic queue, the
//     frames assembled for the agent, the caller's endpointer and the phase lock. The rtc read
//     loop takes it for each packet (ReceiveCallerRTP), the tick to assemble a frame no packet
//     completed, and Attach, Detach, PushCallerPCM and Close.
//   - the agent side (agent.go), under agent.mu: the agent's queued audio and the packets encoded
//     ahead. PushAgentAudio, FlushAgent and AgentQueued take it, and the tick to take its audio.
//     libopus runs outside the lock: a goroutine encoding ahead sets agent.encoding, copies the
//     block out, encodes it unlocked and hands the packet back under the lock, so the encoder is
//     only ever used by the goroutine that set the flag (or by the tick, under the lock, when no
//     encode is in flight). A tick that needs the block in flight waits for it on agent.done.
//   - the tick (tick.go): the frames being recorded and sent, the agent's endpointer, counters;
//     only the tick goroutine touches it, so it has no lock.
//
// The locks are taken in this order, never the other way round:
//
//	caller.mu  →  emitMu  →  agent.mu
//	statsMu and the clock's own lock are leaves: taken under any of the above, holding nothing.
//
// caller.mu comes first because a packet that completes a frame delivers it to the agent at once,
// from inside ReceiveCallerRTP: the caller side calls OnCallerFrame and OnEvent under emitMu (one
// callback at a time) while it holds caller.mu, and the tick emits its own events under emitMu
// holding no lock. A callback may therefore push or flush agent audio (agent.mu), but must not
// call anything that takes caller.mu (ReceiveCallerRTP, PushCallerPCM, CallerQueued, Attach,
// Detach, Close): that would deadlock. The tick never holds agent.mu and caller.mu at once, and
// no code takes caller.mu or emitMu while holding agent.mu.
//
// Every RealClock of the process waits on one timer (pacer.go): a heap of wake-ups armed for the
// earliest, on a Go timer and a kernel timerfd. The pacer's lock is a leaf too.
package media
