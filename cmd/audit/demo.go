package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
)

// demoStudy is the study `audit demo` sets up: one participant per run, two calls each.
const demoStudy = "demo"

// demoTasks are the tasks of a demo participant, in order: a short incident report whose cue (a
// correction) fires on the media clock, then an insurance claim with verification, a correction
// and an approval.
var demoTasks = []string{"it-vpn-incident", "fnol-auto-glass"}

// demoLinks are what setupDemo hands out.
type demoLinks struct {
	Participant  string
	Experimenter string
	Session      string // the participant's token
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	st, err := parseAndStartStack(ctx, fs, addStackFlags(fs, "127.0.0.1:8080"), args, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	links, err := setupDemo(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "participant: %s\n", links.Participant)
	fmt.Fprintf(stdout, "experimenter: %s (works once, within an hour)\n", links.Experimenter)
	fmt.Fprintln(stdout, "Open the participant link in Chromium or Firefox (allow the microphone). Interrupt (Ctrl-C) to stop.")
	return st.wait(ctx)
}

// setupDemo creates (or reuses) the demo study and experimenter, adds a fresh participant with two
// calls against the reference agent, and returns their links.
func setupDemo(ctx context.Context, st *stack) (demoLinks, error) {
	db := st.db
	cfg, _ := json.Marshal(map[string]string{"title": "Voice assistant study (demo)", "completion_code": "DEMO-2026"})
	if _, err := db.CreateStudy(ctx, audit.Study{ID: demoStudy, Name: "Demo study", Seed: 1, Config: cfg}); err != nil && !errors.Is(err, audit.ErrConflict) {
		return demoLinks{}, err
	}
	var tasks []string
	for _, id := range demoTasks {
		for _, t := range st.tasks {
			if t.ID == id {
				tasks = append(tasks, id)
			}
		}
	}
	for _, t := range st.tasks {
		if len(tasks) >= 2 {
			break
		}
		if len(tasks) == 0 || tasks[0] != t.ID {
			tasks = append(tasks, t.ID)
		}
	}
	slot := "demo-" + time.Now().UTC().Format("20060102-150405.000")
	var rows []audit.PlanRow
	for i, t := range tasks {
		rows = append(rows, audit.PlanRow{Slot: slot, Position: i + 1, Task: t, System: referenceAgentLabel, Repeat: 1})
	}
	if _, err := db.AddPlan(ctx, demoStudy, rows); err != nil {
		return demoLinks{}, err
	}
	p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: demoStudy})
	if err != nil {
		return demoLinks{}, err
	}
	x, err := db.CreateExperimenter(ctx, "demo", randomPassword())
	if errors.Is(err, audit.ErrConflict) {
		x, err = db.ExperimenterByName(ctx, "demo")
	}
	if err != nil {
		return demoLinks{}, err
	}
	tok, err := db.IssueSignInLink(ctx, x.ID, "demo link", time.Hour) // one use
	if err != nil {
		return demoLinks{}, err
	}
	base := st.web.URL()
	return demoLinks{Participant: base + "/p/" + p.Token, Experimenter: base + "/x/login?token=" + tok, Session: p.Token}, nil
}

func randomPassword() string {
	b := make([]byte, 18)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
