package report

import "iter"

// Report is every number of a study's report. It is what report.json holds; the Markdown, HTML,
// CSV and figures are renderings of it.
type Report struct {
	Study     StudyInfo `json:"study"`
	Seed      uint64    `json:"bootstrap_seed"`
	Resamples int       `json:"bootstrap_resamples"`
	Level     float64   `json:"confidence_level"`
	// IntervalMethod names the bootstrap interval every Low/High is (IntervalExpandedPercentile).
	IntervalMethod string   `json:"interval_method"`
	Graders        []string `json:"grader_versions"`

	Counts  []ModeCount    `json:"counts"`
	Systems []SystemResult `json:"systems"`
	Deltas  []Delta        `json:"deltas"`
	Anchor  []AnchorResult `json:"anchor"`
	// AnchorRepeats is the number of anchor repeats the plan has (0: no anchor design, and no
	// agreement between participants is computed).
	AnchorRepeats int              `json:"anchor_repeats_planned"`
	Annotators    *AnnotatorResult `json:"annotators"`
	Slices        []SliceRow       `json:"slices"`
	FieldMiss     []FieldMiss      `json:"field_misses"`
	Exclusions    ExclusionResult  `json:"exclusions"`
	// Delivery is each system's turn-taking per mode (overlaps, barge-ins, talk times, latency).
	Delivery []DeliveryRow `json:"delivery"`
	// Participants is the share of variance due to participants and the delta's sensitivity to
	// resampling them; nil without human sessions.
	Participants *ParticipantResult `json:"participants,omitempty"`
	Planning     *PlanningResult    `json:"planning,omitempty"`
	// Conditions slices completion by listening condition (present when a session ran under
	// one); SoundAlike counts passes verified only through a sound-alike match (when a task
	// verifies by sound); Transfers counts hand-overs to a human (when a task has a transfer
	// rule or a call transferred).
	Conditions []ConditionRow  `json:"conditions,omitempty"`
	SoundAlike []SoundAlikeRow `json:"sound_alike,omitempty"`
	Transfers  []TransferRow   `json:"transfers,omitempty"`
	Notes      []string        `json:"notes"`
}

// IntervalExpandedPercentile is the report's interval: the percentile interval of the task-level
// bootstrap read at the tail level widened for the number of tasks (Hesterberg 2015), which
// covers its nominal level with 24 tasks where the plain percentile interval does not.
const IntervalExpandedPercentile = "expanded percentile"

// ModeCount says how many sessions of a mode the study has and how many count.
type ModeCount struct {
	Mode       Mode `json:"mode"`
	Sessions   int  `json:"sessions"`
	Included   int  `json:"included"`
	Excluded   int  `json:"excluded"`
	Ungraded   int  `json:"ungraded"`   // ended, not excluded, but without a grade
	Unfinished int  `json:"unfinished"` // still running or never ended
}

// Proportion is a count of successes with its Wilson score interval.
type Proportion struct {
	Successes int `json:"successes"`
	N         int `json:"n"`
	P         Num `json:"p"`
	Low       Num `json:"low"`
	High      Num `json:"high"`
}

// Interval is a cluster (task-level unless said otherwise) bootstrap interval: Low and High are
// the expanded percentile bounds the report uses, BCaLow and BCaHigh the bias-corrected and
// accelerated bounds from the same resamples, expanded alike.
type Interval struct {
	Estimate  Num `json:"estimate"`
	Low       Num `json:"low"`
	High      Num `json:"high"`
	BCaLow    Num `json:"bca_low"`
	BCaHigh   Num `json:"bca_high"`
	Clusters  int `json:"clusters"`  // tasks (or participants, items) resampled
	Undefined int `json:"undefined"` // resamples where the statistic was undefined
}

// SystemResult is one system's human and synthetic results side by side.
type SystemResult struct {
	System    SystemInfo `json:"system"`
	Human     ModeResult `json:"human"`
	Synthetic ModeResult `json:"synthetic"`
	Price     *Price     `json:"price,omitempty"`
}

// ByMode yields the system's results mode by mode in report order: human, then synthetic.
func (sr SystemResult) ByMode() iter.Seq2[Mode, ModeResult] {
	return func(yield func(Mode, ModeResult) bool) {
		if yield(Human, sr.Human) {
			yield(Synthetic, sr.Synthetic)
		}
	}
}

// ModeResult is one system's results in one mode, over the included sessions.
type ModeResult struct {
	Sessions int `json:"sessions"`
	Tasks    int `json:"tasks"`
	// WS is Workflow Success over sessions with its Wilson interval; PassAt1 averages the tasks'
	// success rates (each task weighted equally) with a task-level bootstrap interval. They agree
	// when every task has the same number of sessions.
	WS      Proportion `json:"ws"`
	PassAt1 Interval   `json:"pass_at_1"`
	PassK   *PassK     `json:"pass_k,omitempty"`
	TS      Proportion `json:"ts"`
	PV      Proportion `json:"pv"`
	AC      Proportion `json:"ac"`
	AV      Proportion `json:"av"`
	// AFA is Artifact Field Accuracy averaged over tasks (each the mean over its sessions).
	AFA     Interval `json:"afa"`
	TTR     TTR      `json:"ttr"`
	Latency Latency  `json:"latency"`
	Cost    Cost     `json:"cost"`
	// Cues is cue adherence, pooled over the sessions' cues (human sessions; synthetic callers
	// follow the reveal graph without cues).
	Cues CueAdherence `json:"cues"`
}

// CueAdherence separates what the caller did with a cue from what the agent did with it: a cue
// the caller said and the agent did not apply is the agent's miss.
type CueAdherence struct {
	Issued int `json:"issued"`
	// Spoken: the caller spoke after the cue; Said: what they said carried the cued content (over
	// the cues whose words were recognised); Applied: the workspace changed in the cued way.
	Spoken  Proportion `json:"spoken"`
	Said    Proportion `json:"said"`
	Applied Proportion `json:"applied"`
}

// PassK is pass@k and pass^k where tasks have repeats.
type PassK struct {
	K        int `json:"k"`
	Tasks    int `json:"tasks"` // tasks with at least k sessions, over which both are averaged
	PassAtK  Num `json:"pass_at_k"`
	PassHatK Num `json:"pass_hat_k"`
}

// TTR is time-to-resolution over the sessions that reached the target state.
type TTR struct {
	Resolved Proportion `json:"resolved"`
	MedianS  Num        `json:"median_s"`
	// MeanS averages the tasks' mean TTR (seconds) with a task-level bootstrap interval.
	MeanS Interval `json:"mean_s"`
}

// Latency is the agent's response latency on the media clock, pooled over sessions.
type Latency struct {
	Responses int `json:"responses"`
	MedianMS  Num `json:"median_ms"`
	P25MS     Num `json:"p25_ms"`
	P75MS     Num `json:"p75_ms"`
	P90MS     Num `json:"p90_ms"`
}

// Cost is per-call usage, averaged over calls whose provider reported tokens.
type Cost struct {
	CallsWithUsage        int `json:"calls_with_usage"`
	InputTokensPerCall    Num `json:"input_tokens_per_call"`
	OutputTokensPerCall   Num `json:"output_tokens_per_call"`
	InputAudioTokensCall  Num `json:"input_audio_tokens_per_call"`
	OutputAudioTokensCall Num `json:"output_audio_tokens_per_call"`
	AudioSecondsPerCall   Num `json:"audio_seconds_per_call"` // caller plus agent audio the adapter measured
	// USDPerCall is priced from Options.Prices; NaN without a price for the system.
	USDPerCall Num `json:"usd_per_call"`
}

// Price is a system's price per million tokens, in US dollars.
type Price struct {
	InputText   float64 `json:"input_text_per_mtok"`
	InputAudio  float64 `json:"input_audio_per_mtok"`
	OutputText  float64 `json:"output_text_per_mtok"`
	OutputAudio float64 `json:"output_audio_per_mtok"`
}

// Metric names the per-session measures compared between modes.
type Metric string

// Metrics of the delta table, in report order. TTR is in seconds; the others are proportions.
const (
	MetricWS  Metric = "ws"
	MetricTS  Metric = "ts"
	MetricPV  Metric = "pv"
	MetricAC  Metric = "ac"
	MetricAV  Metric = "av"
	MetricAFA Metric = "afa"
	MetricTTR Metric = "ttr_s"
)

// Metrics lists the compared measures in report order.
var Metrics = []Metric{MetricWS, MetricTS, MetricPV, MetricAC, MetricAV, MetricAFA, MetricTTR}

// AllSystems labels rows pooled over systems (per task, the mean of the systems' paired
// differences).
const AllSystems = "(all systems)"

// Delta is a human-minus-synthetic difference of one metric for one system, paired by task.
type Delta struct {
	System    string `json:"system"`
	Metric    Metric `json:"metric"`
	Human     Num    `json:"human"`     // mean over the paired tasks
	Synthetic Num    `json:"synthetic"` // mean over the paired tasks
	// Diff is the mean over paired tasks of (human task mean − synthetic task mean).
	Diff Interval `json:"diff"`
}

// AnchorResult is the anchor subset's agreement between the two participants who called the same
// task with the same system.
type AnchorResult struct {
	System string `json:"system"`
	Pairs  int    `json:"pairs"`
	// WSAgree counts pairs whose Workflow Success agreed.
	WSAgree Proportion `json:"ws_agree"`
	// WSAlpha is Krippendorff's alpha (nominal) of WS over pairs; NaN with a note when undefined.
	WSAlpha Num    `json:"ws_alpha"`
	WSNote  string `json:"ws_note,omitempty"`
	// AFAMeanAbsDiff is the mean absolute AFA difference within pairs; AFAAlpha its alpha (interval).
	AFAMeanAbsDiff Num          `json:"afa_mean_abs_diff"`
	AFAAlpha       Num          `json:"afa_alpha"`
	AFANote        string       `json:"afa_note,omitempty"`
	Tasks          []AnchorPair `json:"pairs_detail"`
}

// AnchorPair is one anchor cell's two sessions.
type AnchorPair struct {
	Task     string    `json:"task"`
	Sessions [2]string `json:"sessions"`
	WS       [2]int    `json:"ws"`
	AFA      [2]Num    `json:"afa"`
}

// AnnotatorResult is the annotator study of the frozen caller utterances.
type AnnotatorResult struct {
	Items      int `json:"items"`
	Tasks      int `json:"tasks"`
	Annotators int `json:"annotators"`
	Ratings    int `json:"ratings"`
	// Fidelity and Naturalness are mean ratings (1–5) with task-level bootstrap intervals.
	Fidelity    Interval `json:"fidelity"`
	Naturalness Interval `json:"naturalness"`
	// Leakage is the share of ratings that flagged leakage, with a task-level bootstrap interval;
	// LeakItems counts items a majority of their raters flagged.
	Leakage          Interval     `json:"leakage"`
	LeakRatings      int          `json:"leak_ratings"`
	LeakItems        int          `json:"leak_items_majority"`
	FidelityAlpha    AlphaResult  `json:"fidelity_alpha"`
	NaturalnessAlpha AlphaResult  `json:"naturalness_alpha"`
	LeakageKappa     KappaResult  `json:"leakage_kappa"`
	PerItem          []ItemRating `json:"per_item"`
}

// AlphaResult is Krippendorff's alpha (ordinal) with a bootstrap interval over items.
type AlphaResult struct {
	Alpha    Num      `json:"alpha"`
	Interval Interval `json:"interval"`
	Units    int      `json:"units"`
	Values   int      `json:"pairable_values"`
	Note     string   `json:"note,omitempty"`
}

// KappaResult is Fleiss' kappa of the leakage judgements.
type KappaResult struct {
	Kappa    Num    `json:"kappa"`
	Subjects int    `json:"subjects"`
	Raters   int    `json:"raters_per_subject"`
	Z        Num    `json:"z"`
	PValue   Num    `json:"p_value"`
	Note     string `json:"note,omitempty"`
}

// ItemRating summarises one item's ratings.
type ItemRating struct {
	Item        string `json:"item"`
	Task        string `json:"task"`
	Plan        string `json:"plan"`
	Ratings     int    `json:"ratings"`
	Fidelity    Num    `json:"fidelity"`
	Naturalness Num    `json:"naturalness"`
	LeakVotes   int    `json:"leak_votes"`
}

// Slice dimensions, in report order.
var SliceDimensions = []string{"archetype", "industry", "authorization", "tool_burden", "behavior_profile", "risk_tier", "required_fields"}

// SliceRow is one system's results on the tasks of one stratum.
type SliceRow struct {
	Dimension string     `json:"dimension"`
	Value     string     `json:"value"`
	System    string     `json:"system"`
	Tasks     int        `json:"tasks"`
	Human     Proportion `json:"human_ws"`
	Synthetic Proportion `json:"synthetic_ws"`
	HumanAFA  Num        `json:"human_afa"`
	SynthAFA  Num        `json:"synthetic_afa"`
	// Delta is the WS difference paired by task, with a task-level bootstrap interval.
	Delta Interval `json:"ws_delta"`
}

// FieldMiss counts, for one graded field of one task, the included sessions that got it wrong.
type FieldMiss struct {
	Task      string `json:"task"`
	Field     string `json:"field"`
	Required  bool   `json:"required"`
	HumanMiss int    `json:"human_misses"`
	HumanN    int    `json:"human_sessions"`
	SynthMiss int    `json:"synthetic_misses"`
	SynthN    int    `json:"synthetic_sessions"`
	HumanRate Num    `json:"human_miss_rate"`
	SynthRate Num    `json:"synthetic_miss_rate"`
}

// ExclusionResult counts and lists the excluded sessions.
type ExclusionResult struct {
	Total    int               `json:"total"`
	Passed   int               `json:"passed"` // excluded sessions whose grade had WS = 1
	ByReason []ReasonCount     `json:"by_reason"`
	Sessions []ExcludedSession `json:"sessions"`
}

// ReasonCount is how many sessions were excluded for a reason, and how many of them had passed.
type ReasonCount struct {
	Reason string `json:"reason"`
	Human  int    `json:"human"`
	Synth  int    `json:"synthetic"`
	Passed int    `json:"passed"`
}

// ExcludedSession is one excluded session.
type ExcludedSession struct {
	Session string `json:"session"`
	Mode    Mode   `json:"mode"`
	System  string `json:"system"`
	Task    string `json:"task"`
	Reason  string `json:"reason"`
	Note    string `json:"note"`
	By      string `json:"by"`
	Graded  bool   `json:"graded"`
	Passed  bool   `json:"passed"`
}

// ParticipantResult says how much of the human sessions' variation lies with who made the call.
type ParticipantResult struct {
	Participants int `json:"participants"`
	Sessions     int `json:"sessions"`
	// ICC is, per metric, the intra-class correlation of the human sessions' residuals (a
	// session's outcome minus its system and task's synthetic mean) within participants.
	ICC []ICCRow `json:"icc"`
	// Sensitivity sets beside each delta's task-level interval one from resampling participants.
	Sensitivity []SensitivityRow `json:"delta_sensitivity"`
}

// ICCRow is the share of one metric's residual variance that lies between participants.
type ICCRow struct {
	Metric       Metric `json:"metric"`
	Participants int    `json:"participants"`
	Sessions     int    `json:"sessions"`
	// ICC is the one-way ANOVA estimate with a participant-level bootstrap interval (Clusters
	// counts participants). It can fall below 0 by chance when participants do not differ.
	ICC     Interval `json:"icc"`
	Between Num      `json:"between_participant_variance"`
	Within  Num      `json:"within_participant_variance"`
	// MeanSessions is the mean number of sessions per participant (n0 is what the estimator uses).
	MeanSessions Num    `json:"sessions_per_participant"`
	Note         string `json:"note,omitempty"`
}

// SensitivityRow is one delta with two bootstraps: over tasks (the report's interval) and over
// participants (each resample draws participants with their human sessions; the synthetic task
// means stay fixed).
type SensitivityRow struct {
	System           string   `json:"system"`
	Metric           Metric   `json:"metric"`
	Participants     int      `json:"participants"`
	TaskLevel        Interval `json:"task_level"`
	ParticipantLevel Interval `json:"participant_level"`
}

// PlanningResult is the minimum detectable human-minus-synthetic delta at the planned size.
type PlanningResult struct {
	Participants           int     `json:"participants"`
	SessionsPerParticipant int     `json:"sessions_per_participant"`
	Alpha                  float64 `json:"alpha"`
	Power                  float64 `json:"power"`
	// SessionsPerSystem is ⌊participants × sessions per participant ÷ systems⌋: rounded down,
	// Leftover sessions are not counted.
	SessionsPerSystem int           `json:"sessions_per_system"`
	Leftover          int           `json:"leftover_sessions"`
	Rows              []PlanningRow `json:"rows"`
}

// PlanningRow is the minimum detectable delta for one system (or all) and metric.
type PlanningRow struct {
	System string `json:"system"`
	Metric Metric `json:"metric"`
	// HumanSessions is the planned number of human sessions of the system (all systems' for the
	// pooled row), laid out over Tasks tasks as the planner does: every task once, anchor tasks
	// first for any second run.
	HumanSessions int `json:"human_sessions"`
	Tasks         int `json:"tasks"`
	// WithinVariance is the synthetic caller's pooled within-task variance of one session's
	// outcome; Seeds the mean synthetic sessions per task (each task's own count is used).
	WithinVariance Num `json:"within_task_variance"`
	Seeds          Num `json:"synthetic_sessions_per_task"`
	// DeltaVariance is Var(Δ) = Σ_t w_t²·s²·(1/n_t + 1/k_t) with each task's planned human sessions
	// n_t and synthetic runs k_t, if humans vary within a task as the synthetic caller does.
	DeltaVariance Num `json:"delta_variance"`
	// DF is the t quantiles' degrees of freedom: tasks − 1.
	DF   int    `json:"degrees_of_freedom"`
	MDD  Num    `json:"min_detectable_delta"`
	Note string `json:"note,omitempty"`
}
