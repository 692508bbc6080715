package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
)

func init() {
	register("experimenter add", "create an experimenter account (password read from stdin)", runExperimenterAdd)
	register("experimenter link", "issue a sign-in link for an experimenter", runExperimenterLink)
}

// openDB opens the console database: DATABASE_URL, else the private cluster under data.
func openDB(ctx context.Context, data string) (*store.DB, error) {
	return store.Open(ctx, store.Config{URL: os.Getenv("DATABASE_URL"), DataDir: data})
}

func runExperimenterAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experimenter add", stderr)
	data := fs.String("data", "audit_data", "data directory")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: echo PASSWORD | audit experimenter add NAME")
		return errUsage
	}
	pw, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read password from stdin: %w", err)
	}
	pw = strings.TrimRight(pw, "\r\n")
	db, err := openDB(ctx, *data)
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
	data := fs.String("data", "audit_data", "data directory")
	base := fs.String("base-url", "http://127.0.0.1:8080", "console base URL")
	ttl := fs.Duration("ttl", audit.DefaultSignInLinkTTL, "how long the link may wait before its one use")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: audit experimenter link NAME [--ttl 15m] [--base-url URL]")
		return errUsage
	}
	db, err := openDB(ctx, *data)
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
