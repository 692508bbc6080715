package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/voicebench/humanaudit/internal/audit"
)

func runExperimenterAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experimenter add", stderr)
	dbf := addDataFlag(fs, "data directory")
	pos, err := exactArgs(fs, args, 1, "usage: echo PASSWORD | audit experimenter add NAME")
	if err != nil {
		return err
	}
	pw, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read password from stdin: %w", err)
	}
	pw = strings.TrimRight(pw, "\r\n")
	db, err := dbf.open(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	x, err := db.CreateExperimenter(ctx, pos[0], pw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "experimenter %s created (id %d); sign in at /x/login\n", x.Name, x.ID)
	return nil
}

func runExperimenterLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experimenter link", stderr)
	dbf := addDataFlag(fs, "data directory")
	base := fs.String("base-url", defaultBaseURL, "console base URL")
	ttl := fs.Duration("ttl", audit.DefaultSignInLinkTTL, "how long the link may wait before its one use")
	pos, err := exactArgs(fs, args, 1, "usage: audit experimenter link NAME [--ttl 15m] [--base-url URL]")
	if err != nil {
		return err
	}
	db, err := dbf.open(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	x, err := db.ExperimenterByName(ctx, pos[0])
	if err != nil {
		return err
	}
	tok, err := db.IssueSignInLink(ctx, x.ID, "cli link", *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "experimenter: %s/x/login?token=%s\n", strings.TrimSuffix(*base, "/"), tok)
	fmt.Fprintf(stdout, "the link works once, within %s; it opens a session that ends at sign-out or after the console's idle and absolute limits (2 h and 12 h by default)\n", *ttl)
	return nil
}
