package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/voicebench/humanaudit/internal/stats"
)

// runStats lists the statistics subcommands; it is what "audit stats" alone, or with an unknown
// subcommand, runs.
func runStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	w := stdout
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "help" {
		fmt.Fprintf(stderr, "audit stats: unknown statistic %q\n\n", args[0])
		w = stderr
	}
	fmt.Fprintln(w, "usage: audit stats <statistic> [flags] [FILE]")
	fmt.Fprintln(w)
	for _, c := range commandsUnder("stats ") {
		fmt.Fprintf(w, "  %-18s %s\n", strings.TrimPrefix(c.path, "stats "), c.summary)
	}
	if w == stderr {
		return errUsage
	}
	return nil
}

// statsNum is a JSON number that is null when the statistic is undefined (NaN or infinite):
// encoding/json cannot write NaN, and null says "no value" to every reader.
type statsNum float64

func (x statsNum) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

func writeStatsJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// statsOneFile checks that exactly one FILE was given and opens it.
func statsOneFile(fs *flag.FlagSet, files []string) (*os.File, error) {
	switch len(files) {
	case 0:
		return nil, statsUsageError(fs, fs.Name()+": missing FILE")
	case 1:
		return os.Open(files[0])
	}
	return nil, statsUsageError(fs, fmt.Sprintf("%s: want one FILE, got %d: %s", fs.Name(), len(files), strings.Join(files, " ")))
}

// parseStatsFile parses a statistic's flags and opens its one FILE.
func parseStatsFile(fs *flag.FlagSet, args []string) (*os.File, error) {
	files, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	return statsOneFile(fs, files)
}

// newStatsFlags is a statistic's flag set, whose usage gives its synopsis and what it computes
// before the flags.
func newStatsFlags(name string, stderr io.Writer, synopsis, about string) *flag.FlagSet {
	fs := newFlags(name, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+synopsis)
		fmt.Fprintln(stderr, about)
		fs.PrintDefaults()
	}
	return fs
}

// statsUsageError prints what is wrong with a statistic's arguments, then its usage.
func statsUsageError(fs *flag.FlagSet, problem string) error {
	fmt.Fprintln(fs.Output(), problem)
	fs.Usage()
	return errUsage
}

// statsAlphaOutput is the JSON of audit stats alpha.
type statsAlphaOutput struct {
	Level                string   `json:"level"`
	Alpha                statsNum `json:"alpha"`
	ObservedDisagreement statsNum `json:"observed_disagreement"`
	ExpectedDisagreement statsNum `json:"expected_disagreement"`
	Units                int      `json:"units"`
	PairableValues       int      `json:"pairable_values"`
	DroppedUnits         int      `json:"dropped_units"`
	Values               int      `json:"values"`
	Note                 string   `json:"note,omitempty"`
	*statsCIFields
}

// statsCIFields are the CI fields added by --bootstrap.
type statsCIFields struct {
	CILow              statsNum `json:"ci_low"`
	CIHigh             statsNum `json:"ci_high"`
	CILevel            float64  `json:"ci_level"`
	Resamples          int      `json:"resamples"`
	UndefinedResamples int      `json:"undefined_resamples"`
	Seed               uint64   `json:"seed"`
}

func runStatsAlpha(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStatsFlags("stats alpha", stderr, "audit stats alpha --level nominal|ordinal|interval|ratio FILE [--bootstrap N --seed S]",
		"Krippendorff's alpha from CSV long data with columns unit,rater,value (missing ratings absent or empty).")
	levelName := fs.String("level", "", "level of measurement: nominal, ordinal, interval or ratio (required)")
	resamples := fs.Int("bootstrap", 0, "add a percentile CI from `N` resamples of the pairable units (0: none)")
	seed := fs.Uint64("seed", 1, "seed of the bootstrap")
	ciLevel := fs.Float64("ci-level", 0.95, "confidence level of the bootstrap CI")
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *levelName == "" {
		return statsUsageError(fs, "audit stats alpha: --level is required")
	}
	level, err := stats.ParseLevel(*levelName)
	if err != nil {
		return err
	}
	if *resamples < 0 {
		return fmt.Errorf("--bootstrap %d: want 0 or more resamples", *resamples)
	}
	f, err := statsOneFile(fs, files)
	if err != nil {
		return err
	}
	defer f.Close()
	ratings, err := stats.ReadRatings(f, f.Name())
	if err != nil {
		return err
	}
	data, err := stats.NewReliabilityData(ratings, level)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	res := data.Alpha()
	out := statsAlphaOutput{
		Level:                res.Level.String(),
		Alpha:                statsNum(res.Alpha),
		ObservedDisagreement: statsNum(res.ObservedDisagreement),
		ExpectedDisagreement: statsNum(res.ExpectedDisagreement),
		Units:                res.Units,
		PairableValues:       res.PairableValues,
		DroppedUnits:         res.DroppedUnits,
		Values:               res.Values,
		Note:                 res.Note,
	}
	if *resamples > 0 {
		bs, err := stats.NewClusterBootstrap(*resamples, *ciLevel, *seed)
		if err != nil {
			return err
		}
		ci, err := data.BootstrapAlpha(bs)
		if err != nil {
			return err
		}
		out.statsCIFields = &statsCIFields{
			CILow: statsNum(ci.Low), CIHigh: statsNum(ci.High), CILevel: ci.Level,
			Resamples: ci.Resamples, UndefinedResamples: ci.Undefined, Seed: *seed,
		}
	}
	return writeStatsJSON(stdout, out)
}

// statsFleissOutput is the JSON of audit stats fleiss.
type statsFleissOutput struct {
	Kappa       statsNum            `json:"kappa"`
	PBar        statsNum            `json:"p_bar"`
	PE          statsNum            `json:"p_e"`
	PerCategory map[string]statsNum `json:"per_category"`
	Z           statsNum            `json:"z"`
	PValue      statsNum            `json:"p_value"`
	Subjects    int                 `json:"subjects"`
	Raters      int                 `json:"raters"`
	Note        string              `json:"note,omitempty"`
}

func runStatsFleiss(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStatsFlags("stats fleiss", stderr, "audit stats fleiss [--counts] FILE",
		"Fleiss' kappa from CSV long data unit,rater,value, or with --counts from a table of counts.")
	counts := fs.Bool("counts", false, "FILE is a subjects × categories table of counts (first column the subject id)")
	f, err := parseStatsFile(fs, args)
	if err != nil {
		return err
	}
	defer f.Close()
	var table stats.CountTable
	if *counts {
		table, err = stats.ReadCounts(f, f.Name())
	} else {
		var ratings []stats.Rating
		ratings, err = stats.ReadRatings(f, f.Name())
		if err == nil {
			if table, err = stats.CountRatings(ratings); err != nil {
				err = fmt.Errorf("%s: %w", f.Name(), err)
			}
		}
	}
	if err != nil {
		return err
	}
	res, err := stats.FleissKappa(table)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	out := statsFleissOutput{
		Kappa: statsNum(res.Kappa), PBar: statsNum(res.PBar), PE: statsNum(res.PE),
		PerCategory: map[string]statsNum{},
		Z:           statsNum(res.Z), PValue: statsNum(res.PValue),
		Subjects: res.Subjects, Raters: res.Raters, Note: res.Note,
	}
	for _, c := range res.PerCategory {
		out.PerCategory[c.Category] = statsNum(c.Kappa)
	}
	return writeStatsJSON(stdout, out)
}

func runStatsWilson(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStatsFlags("stats wilson", stderr, "audit stats wilson --successes X --n N [--level 0.95]",
		"Wilson score interval (no continuity correction) for X successes out of N.")
	successes := fs.Int("successes", 0, "number of successes `X` (required)")
	n := fs.Int("n", 0, "number of trials `N` (required)")
	level := fs.Float64("level", 0.95, "confidence level")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(rest) > 0 || !set["successes"] || !set["n"] {
		return statsUsageError(fs, "audit stats wilson: --successes and --n are required, and no FILE is taken")
	}
	iv, err := stats.Wilson(*successes, *n, *level)
	if err != nil {
		return err
	}
	return writeStatsJSON(stdout, struct {
		P         float64 `json:"p"`
		Low       float64 `json:"low"`
		High      float64 `json:"high"`
		Level     float64 `json:"level"`
		Successes int     `json:"successes"`
		N         int     `json:"n"`
	}{iv.P, iv.Low, iv.High, iv.Level, iv.Successes, iv.N})
}

// statsPassKTask is one task's line in audit stats passk.
type statsPassKTask struct {
	Task      string  `json:"task"`
	Trials    int     `json:"trials"`
	Successes int     `json:"successes"`
	PassAtK   float64 `json:"pass_at_k"`
	PassHatK  float64 `json:"pass_hat_k"`
}

func runStatsPassK(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStatsFlags("stats passk", stderr, "audit stats passk --k K FILE",
		"pass@k (unbiased estimator, Chen et al. 2021) and pass^k (all k succeed, tau-bench) averaged over tasks,\nfrom CSV long data task,trial,success.")
	k := fs.Int("k", 0, "number of draws `K` (required, at least 1)")
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *k < 1 {
		return statsUsageError(fs, "audit stats passk: --k is required and must be at least 1")
	}
	f, err := statsOneFile(fs, files)
	if err != nil {
		return err
	}
	defer f.Close()
	trials, err := stats.ReadTrials(f, f.Name())
	if err != nil {
		return err
	}
	res, err := stats.PassK(trials, *k)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	out := struct {
		K        int              `json:"k"`
		PassAtK  float64          `json:"pass_at_k"`
		PassHatK float64          `json:"pass_hat_k"`
		Tasks    int              `json:"tasks"`
		PerTask  []statsPassKTask `json:"per_task"`
	}{K: res.K, PassAtK: res.PassAtK, PassHatK: res.PassHatK, Tasks: len(res.PerTask)}
	for _, t := range res.PerTask {
		out.PerTask = append(out.PerTask, statsPassKTask(t))
	}
	return writeStatsJSON(stdout, out)
}

func runStatsBootstrap(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStatsFlags("stats bootstrap", stderr, "audit stats bootstrap FILE [--resamples 10000 --seed 1 --level 0.95]",
		"Task-level (cluster) bootstrap percentile CI. FILE is CSV task,value (CI of the mean of per-task means)\n"+
			"or task,a,b (CI of the mean paired difference a − b of per-task means). Rows may repeat a task;\n"+
			"empty cells are missing.")
	resamples := fs.Int("resamples", 10000, "number of bootstrap resamples")
	seed := fs.Uint64("seed", 1, "seed of the resampling")
	level := fs.Float64("level", 0.95, "confidence level")
	f, err := parseStatsFile(fs, args)
	if err != nil {
		return err
	}
	defer f.Close()
	table, err := stats.ReadTaskTable(f, f.Name())
	if err != nil {
		return err
	}
	means, err := table.TaskMeans()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	bs, err := stats.NewClusterBootstrap(*resamples, *level, *seed)
	if err != nil {
		return err
	}
	statistic := "mean"
	var ci stats.Interval
	if len(means) == 2 {
		statistic = "paired_difference"
		ci, err = bs.PairedDifference(means[0], means[1])
	} else {
		ci, err = bs.Mean(means[0])
	}
	if err != nil {
		return err
	}
	return writeStatsJSON(stdout, struct {
		Statistic          string   `json:"statistic"`
		Measures           []string `json:"measures"`
		Tasks              int      `json:"tasks"`
		Estimate           statsNum `json:"estimate"`
		CILow              statsNum `json:"ci_low"`
		CIHigh             statsNum `json:"ci_high"`
		Level              float64  `json:"level"`
		Resamples          int      `json:"resamples"`
		UndefinedResamples int      `json:"undefined_resamples"`
		Seed               uint64   `json:"seed"`
	}{statistic, table.Measures, ci.Clusters, statsNum(ci.Estimate), statsNum(ci.Low), statsNum(ci.High),
		ci.Level, ci.Resamples, ci.Undefined, *seed})
}
