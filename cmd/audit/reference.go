package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/voicebench/humanaudit/internal/refagent"
)

// startReferenceAgent starts the offline reference agent in-process on loopback and returns its
// ws:// URL; the closer stops it.
func startReferenceAgent(_ context.Context, log *slog.Logger) (url string, closer io.Closer, err error) {
	srv, err := refagent.New(refagent.Config{Logger: log.With(slog.String("component", "refagent"))})
	if err != nil {
		return "", nil, err
	}
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		srv.Close()
		return "", nil, err
	}
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("reference agent stopped", slog.Any("err", err))
		}
	}()
	return srv.URL(), srv, nil
}
