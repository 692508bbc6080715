package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/voicebench/humanaudit/internal/refagent"
)

// runRefagent serves the reference agent and prints its ws:// URL; the first interrupt closes it
// (dropping open calls), which is how the console's `systems` entries of family "reference" reach
// a standalone agent.
func runRefagent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("refagent", stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "address to listen on (:0 picks a free port)")
	voice := fs.String("voice", refagent.DefaultVoice, "Flite voice of the agent (flite -lv lists them)")
	verbose := fs.Bool("v", false, "log every connection, turn and tool call")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := refagent.New(refagent.Config{Logger: log, Voice: *voice})
	if err != nil {
		return err
	}
	if err := srv.Listen(*addr); err != nil {
		srv.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	fmt.Fprintf(stdout, "reference agent: %s\n", srv.URL())
	select {
	case <-ctx.Done():
	case err := <-served:
		srv.Close()
		return err
	}
	if err := srv.Close(); err != nil {
		return err
	}
	return <-served
}
