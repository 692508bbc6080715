package refagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
	"github.com/voicebench/humanaudit/internal/refagent/turncall"
)

// BenchmarkSuiteTurns plays audit24 (seed 1, or REFAGENT_SUITE_SEEDS) turn by turn: each caller turn rendered in Flite,
// passed through Opus and recognized as the responder does, without the media clock, endpointing
// or barge-in. It takes minutes where BenchmarkSuiteReference takes an hour, so it is how a change
// to understanding is measured first; the real-time suite stays the figure of record. It reports
// mean AFA and the WS count for REFAGENT_SUITE_VOICES (bank, other) and prints the per-task table;
// REFAGENT_SUITE_TASKS limits the tasks and REFAGENT_SUITE_OUT keeps each dialogue.
func BenchmarkSuiteTurns(b *testing.B) {
	needTools(b)
	rec := sharedRecognizer(b)
	tasks := suiteTasks(b)
	seeds := suiteSeeds(b)
	out := os.Getenv("REFAGENT_SUITE_OUT")
	for _, voice := range suiteVoices(b) {
		b.Run(voice, func(b *testing.B) {
			var ids []string
			var grades []grade.Result
			for b.Loop() {
				ids, grades = nil, nil
				for job := range len(tasks) * len(seeds) {
					tk, seed := tasks[job/len(seeds)], seeds[job%len(seeds)]
					v := tk.User.Persona.Voice
					if voice == "other" {
						v = otherVoice(v)
					}
					hearSpoken := func(ctx context.Context, q dialog.Question, said string) dialog.Heard {
						return hear(ctx, rec, q, spoken(b, v, said), nil)
					}
					g, c, err := turncall.Play(context.Background(), tk, seed, dialog.Config{Known: rec.Known, Homophones: rec.Homophones}, hearSpoken)
					if err != nil {
						b.Fatal(err)
					}
					ids, grades = append(ids, suiteName(tk.ID, seed)), append(grades, g)
					if out != "" {
						dir := filepath.Join(out, "turns-"+voice)
						if err := os.MkdirAll(dir, 0o755); err != nil {
							b.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(dir, suiteName(tk.ID, seed)+".txt"), []byte(turncall.Table(ids[len(ids)-1:], grades[len(grades)-1:])+"\n"+strings.Join(c.Lines, "\n")+"\n"), 0o644); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			var afa float64
			ws := 0
			for _, g := range grades {
				afa += g.AFA.Value
				ws += g.WS
			}
			b.Logf("turn suite, %s voice: mean AFA %.3f, WS %d of %d\n%s", voice, afa/float64(len(grades)), ws, len(grades), turncall.Table(ids, grades))
			b.ReportMetric(afa/float64(len(grades)), "AFA")
			b.ReportMetric(float64(ws), "WS")
			b.ReportMetric(0, "ns/op")
		})
	}
}
