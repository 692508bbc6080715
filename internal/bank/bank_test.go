package bank

import (
	"testing"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestSelectIsStableAndSpreadsOverSeeds(t *testing.T) {
	// Stable: the same inputs always give the same variant (these values are frozen: a change
	// would silently re-pick the utterances of every synthetic call).
	frozen := []struct {
		task string
		seed int64
		plan string
		n    int
		want int
	}{
		{"fnol-auto-glass", 0, "open", 3, 0},
		{"fnol-auto-glass", 1, "open", 3, 0},
		{"fnol-auto-glass", 2, "open", 3, 1},
		{"card-lost-freeze-replace", 7, "answer:dob", 3, 1},
		{"utility-payment-arrangement", 42, "revoke:set_up_arrangement", 3, 1},
		{"it-vpn-incident", 0, "answer:employee_id", 3, 1},
		{"x", 123456789, "close", 2, 0},
		{"x", -1, "close", 5, 4},
	}
	for _, f := range frozen {
		if got := Select(f.task, f.seed, f.plan, f.n); got != f.want {
			t.Errorf("Select(%q, %d, %q, %d) = %d, want %d", f.task, f.seed, f.plan, f.n, got, f.want)
		}
	}
	for _, n := range []int{2, 3, 4, 5} {
		counts := make([]int, n)
		const seeds = 600
		for seed := int64(0); seed < seeds; seed++ {
			i := Select("card-lost-freeze-replace", seed, "answer:dob", n)
			if i < 0 || i >= n {
				t.Fatalf("Select returned %d for %d variants", i, n)
			}
			counts[i]++
		}
		for i, c := range counts {
			if want := seeds / n; c < want*2/3 || c > want*4/3 {
				t.Errorf("%d variants: variant %d chosen %d times over %d seeds, want about %d (%v)", n, i, c, seeds, want, counts)
			}
		}
	}
	// Different plans and tasks do not move in lockstep for one seed.
	same := 0
	for seed := int64(0); seed < 200; seed++ {
		if Select("a", seed, "open", 3) == Select("b", seed, "open", 3) {
			same++
		}
	}
	if same > 110 {
		t.Errorf("tasks a and b pick the same variant for %d of 200 seeds", same)
	}
	if Select("x", 1, "p", 1) != 0 || Select("x", 1, "p", 0) != 0 {
		t.Error("one or no variant must select index 0")
	}
}

func TestSpeakerSaysTheSelectedVariantThenRotates(t *testing.T) {
	tk := mustTask(t, "fnol-auto-glass")
	var affirm trace.Plan
	for _, p := range flow.ReachablePlans(tk) {
		if p.ID == "affirm" {
			affirm = p
		}
	}
	vs := tk.Bank["affirm"]
	for seed := int64(0); seed < 5; seed++ {
		say := Speaker(tk, seed)
		first := Select(tk.ID, seed, "affirm", len(vs))
		for k := 0; k < len(vs)+1; k++ {
			if got, want := say(affirm), vs[(first+k)%len(vs)]; got != want {
				t.Fatalf("seed %d, use %d: %q, want %q", seed, k, got, want)
			}
		}
	}
	// A plan the bank lacks falls back to the template rendering.
	delete(tk.Bank, "close")
	if got := Speaker(tk, 0)(trace.Plan{ID: "close", Kind: trace.PlanClose}); got == "" {
		t.Error("no fallback speech")
	}
}

func TestFileNamesAreDistinctAndSafe(t *testing.T) {
	seen := map[string]Variant{}
	for _, tk := range mustSuite(t) {
		for _, v := range Variants(tk) {
			f := FileName(v)
			if prev, dup := seen[f]; dup {
				t.Errorf("%+v and %+v share file %s", prev, v, f)
			}
			seen[f] = v
			for _, r := range f {
				if r == ':' || r == '@' || r == ' ' {
					t.Errorf("file name %q has %q", f, r)
				}
			}
		}
	}
	if got := FileName(Variant{Task: "fnol-auto-glass", Plan: "answer:callback_phone@v2", Variant: 1}); got != "fnol-auto-glass/answer_callback_phone.v2.1.wav" {
		t.Errorf("FileName = %q", got)
	}
}
