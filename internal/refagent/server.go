// Package refagent is the offline reference agent: an OpenAI-Realtime-GA-compatible WebSocket
// server that a session reaches through the same openai adapter as a commercial system, so a
// whole call runs with no API key and no network. The protocol is the family's one server
// (internal/agent/realtimeserver); this package is its audio responder: endpointing (the media
// endpointer, for server VAD), recognition with PocketSphinx (internal/asr; open vocabulary plus a
// grammar per typed question, as IVR systems do) and speech with Debian's flite (internal/tts),
// around the text-only dialogue of refagent/dialog, which knows only the session instructions and
// tool definitions. It is a baseline and a demo partner, not a strong agent: its recognition
// errors are real.
package refagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/tts"
)

// Path is the WebSocket endpoint path, as on api.openai.com.
const Path = realtimeserver.Path

// Config configures a Server. The zero value works when flite and the PocketSphinx model are
// installed.
type Config struct {
	// Logger receives connection diagnostics; nil discards them.
	Logger *slog.Logger
	// Recognizer is shared speech recognition (the console's, for instance); nil loads one with two
	// decoders for whole turns, closed with the server. Each call also opens a channel of its own
	// (asr.Channel, about 40 MB) to recognize the caller's turns while they are spoken.
	Recognizer *asr.Recognizer
	// Voice is the Flite voice (default DefaultVoice).
	Voice string
	// Now is the wall clock: dates said without a year are resolved against it. Default time.Now.
	Now func() time.Time
	// AudioLead is how far ahead of real time reply audio is sent, as a real provider streams it;
	// the rest is paced so that a cancel stops what has not been sent. Default 1 s; negative sends
	// each reply at once.
	AudioLead time.Duration
	// IdleTimeout closes a connection that sends nothing (pings included) for this long. Default 2 min.
	IdleTimeout time.Duration
}

// Server is the reference agent's realtime server: Listen, then Serve (or mount Handler); Close
// ends every connection, releases every goroutine and frees the recognizer it loaded.
type Server struct {
	*realtimeserver.Server
	cfg    Config
	rec    *asr.Recognizer
	ownRec bool
	voice  *tts.Flite
	once   sync.Once // frees the recognizer
}

// New prepares a server: it checks the voice and loads speech recognition unless one is given.
func New(cfg Config) (*Server, error) {
	if cfg.Voice == "" {
		cfg.Voice = DefaultVoice
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AudioLead == 0 {
		cfg.AudioLead = time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v, err := newSpeaker(cfg.Voice)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, voice: v, rec: cfg.Recognizer}
	if s.rec == nil {
		if s.rec, err = asr.New(asr.Config{Decoders: 2, Logger: log}); err != nil {
			return nil, fmt.Errorf("reference agent: %w", err)
		}
		s.ownRec = true
	}
	// The names and e-mail directories load while the server waits for its first call.
	go func() {
		if err := s.rec.PrepareNames(context.Background()); err != nil && !errors.Is(err, asr.ErrClosed) {
			log.Warn("names directory not loaded", slog.Any("err", err))
		}
		if err := s.rec.PrepareMail(context.Background()); err != nil && !errors.Is(err, asr.ErrClosed) {
			log.Warn("e-mail directory not loaded", slog.Any("err", err))
		}
	}()
	s.Server = realtimeserver.New(realtimeserver.Config{Name: "reference agent", Provider: reference, Responder: responder{s},
		VAD: newEndpointer, IDPrefix: "ref", IdleTimeout: cfg.IdleTimeout, Logger: log})
	return s, nil
}

// Close stops listening, drops every connection, waits for their goroutines and frees the
// recognizer it loaded. It is safe to call more than once.
func (s *Server) Close() error {
	err := s.Server.Close()
	s.once.Do(func() {
		if s.ownRec {
			err = errors.Join(err, s.rec.Close())
		}
	})
	return err
}

// connections reports the open connections (for tests).
func (s *Server) connections() int { return s.Conns() }
