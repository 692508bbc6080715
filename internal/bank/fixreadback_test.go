package bank

import (
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/flow"
)

// Every fact that answers a field can be read back wrong, so the shipped bank has a checked
// fix_readback plan for each version the caller can know, and bank check rejects one that does not
// correct or names another value.
func TestEveryTaskHasCheckedFixReadbackPlans(t *testing.T) {
	tasks := mustSuite(t)
	n := 0
	for _, tk := range tasks {
		for _, p := range flow.ReachablePlans(tk) {
			if !strings.HasPrefix(p.ID, "fix_readback:") {
				continue
			}
			n++
			if vs := tk.Bank[p.ID]; len(vs) < MinVariants || len(vs) > MaxVariants {
				t.Errorf("%s: %s has %d variants", tk.ID, p.ID, len(vs))
			}
		}
	}
	if n == 0 {
		t.Fatal("no fix_readback plan is reachable in the suite")
	}
	var tk = tasks[0]
	for _, x := range tasks {
		if x.ID == "invoice-duplicate-payment" {
			tk = x
		}
	}
	plan := plan(t, tk, "fix_readback:invoice")
	if rs := CheckVariant(tk, plan, "Yes, the invoice number is I N V, seven seven three one oh."); len(rs) == 0 {
		t.Error("a fix_readback variant with no correcting word passed the check")
	}
	if rs := CheckVariant(tk, plan, "Sorry, no, it's I N V, seven seven three one oh, and I paid three thousand dollars."); len(rs) == 0 {
		t.Error("a fix_readback variant that names another value passed the check")
	}
	if rs := CheckVariant(tk, plan, tk.Bank[plan.ID][0]); len(rs) != 0 {
		t.Errorf("the shipped variant fails: %v", rs)
	}
}
