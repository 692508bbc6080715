package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/task"
)

func runAnnotateCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("annotate create", stderr)
	sf := addStudyFlags(fs)
	n := fs.Int("annotators", 0, "annotator links to issue")
	itemsFile := fs.String("items", "", "rating set from audit bank rating-set --json (- for standard input); omit to keep the stored set")
	tasksDir := fs.String("tasks-dir", "tasks", "task directory (each item is checked against its task)")
	bankDir := fs.String("bank-dir", "", "bank directory with manifest.json and the WAVs (default DATA/bank)")
	baseURL := fs.String("base-url", defaultBaseURL, "console base URL for the printed links")
	title := fs.String("title", "", "the annotation task's title on the annotators' page (default: keep the stored one, or \""+annotate.DefaultTitle+"\")")
	db, st, err := sf.parseOpen(ctx, fs, args, func() bool { return *n > 0 || *itemsFile != "" || *title != "" },
		"--annotators N (and --items for a new rating set)")
	if err != nil {
		return err
	}
	defer db.Close()
	if *bankDir == "" {
		*bankDir = filepath.Join(*sf.data, "bank")
	}
	set := annotate.StudySet(st.Config)
	stored := false // whether set changed and must be stored
	if *itemsFile != "" {
		var r io.Reader = os.Stdin
		name := "standard input"
		if *itemsFile != "-" {
			f, err := os.Open(*itemsFile)
			if err != nil {
				return err
			}
			defer f.Close()
			r, name = f, *itemsFile
		}
		items, err := annotate.ReadBankItems(name, r)
		if err != nil {
			return err
		}
		tasks, _ := task.LoadAll(*tasksDir)
		audio, err := annotate.LoadAudioIndex(*bankDir)
		if err != nil {
			return err
		}
		prepared, err := annotate.Prepare(items, tasks, audio)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(stderr, line)
			}
			return fmt.Errorf("%s: the rating set was not stored (nothing reaches annotators until every item passes)", name)
		}
		if err := db.PutRatingItems(ctx, prepared); err != nil {
			return err
		}
		set.Items, stored = nil, true
		for _, it := range prepared {
			set.Items = append(set.Items, it.ID)
		}
		tasksSeen := map[string]bool{}
		for _, it := range prepared {
			tasksSeen[it.TaskID] = true
		}
		fmt.Fprintf(stderr, "study %s: %d rating items of %d tasks, blinded and checked\n", *sf.id, len(prepared), len(tasksSeen))
	} else if len(set.Items) == 0 {
		return fmt.Errorf("study %s has no rating set yet: give --items (audit bank rating-set --json)", *sf.id)
	}
	if *title != "" {
		set.Title, stored = *title, true
	}
	if stored {
		cfg, err := annotate.WithSet(st.Config, set)
		if err != nil {
			return err
		}
		if err := db.SetStudyConfig(ctx, *sf.id, cfg); err != nil {
			return err
		}
	}
	base := strings.TrimSuffix(*baseURL, "/")
	for range *n {
		a, err := db.CreateAnnotator(ctx, *sf.id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "annotator: %s/a/%s\n", base, a.Token)
	}
	return nil
}

func runAnnotateExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("annotate export", stderr)
	sf := addStudyFlags(fs)
	out := fs.String("out", "", "ratings.csv to write (- for standard output)")
	db, _, err := sf.parseOpen(ctx, fs, args, func() bool { return *out != "" }, "--out")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.RatingsLong(ctx, *sf.id)
	if err != nil {
		return err
	}
	if err := writeFileOr(*out, stdout, func(w io.Writer) error { return annotate.WriteRatingsCSV(w, rows) }); err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %s: %d ratings\n", *out, len(rows))
	}
	return nil
}
