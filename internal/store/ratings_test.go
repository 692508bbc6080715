package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
)

func TestRatingsUpsertAndStayPerAnnotator(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	items := []audit.RatingItem{
		{ID: "i1", TaskID: "task01", PlanID: "p-open", Variant: "v1", Payload: json.RawMessage(`{"transcript":"Hi, I need a quote."}`)},
		{ID: "i2", TaskID: "task01", PlanID: "p-answer", Variant: "v2"},
	}
	if err := f.db.PutRatingItems(ctx, items); err != nil {
		t.Fatal(err)
	}
	a1, err := f.db.CreateAnnotator(ctx, f.study)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := f.db.CreateAnnotator(ctx, f.study)
	if a1.SeedPosition != 0 || a2.SeedPosition != 1 || a1.Token == a2.Token {
		t.Fatalf("annotators %+v %+v", a1, a2)
	}
	if got, err := f.db.AnnotatorByToken(ctx, a2.Token); err != nil || got.ID != a2.ID {
		t.Fatalf("AnnotatorByToken = %+v, %v", got, err)
	}
	_, err = f.db.AnnotatorByToken(ctx, a2.Token[1:])
	wantErr(t, err, audit.ErrNotFound)

	first, err := f.db.SaveRating(ctx, audit.Rating{AnnotatorID: a1.ID, ItemID: "i1", Fidelity: 4, Naturalness: 3})
	if err != nil {
		t.Fatal(err)
	}
	f.db.SaveRating(ctx, audit.Rating{AnnotatorID: a1.ID, ItemID: "i2", Fidelity: 5, Naturalness: 5})
	f.db.SaveRating(ctx, audit.Rating{AnnotatorID: a2.ID, ItemID: "i1", Fidelity: 1, Naturalness: 2, Leakage: true, Note: "names the account number"})

	// a1 goes back and edits i1.
	f.clock.Advance(10 * time.Minute)
	edited, err := f.db.SaveRating(ctx, audit.Rating{AnnotatorID: a1.ID, ItemID: "i1", Fidelity: 2, Naturalness: 3, Leakage: true, Note: "on second listen"})
	if err != nil {
		t.Fatal(err)
	}
	if !edited.CreatedAt.Equal(first.CreatedAt) || !edited.UpdatedAt.Equal(f.clock.Now()) {
		t.Errorf("edited rating times %v/%v; want created %v kept, updated now", edited.CreatedAt, edited.UpdatedAt, first.CreatedAt)
	}
	mine, err := f.db.AnnotatorRatings(ctx, a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != 2 || mine[0].ItemID != "i1" || mine[0].Fidelity != 2 || !mine[0].Leakage || mine[0].Note != "on second listen" || mine[1].Fidelity != 5 {
		t.Fatalf("a1's ratings %+v", mine)
	}
	for _, r := range mine {
		if r.AnnotatorID != a1.ID {
			t.Fatalf("a1 sees a rating by annotator %d", r.AnnotatorID)
		}
	}
	theirs, _ := f.db.AnnotatorRatings(ctx, a2.ID)
	if len(theirs) != 1 || theirs[0].Fidelity != 1 || theirs[0].AnnotatorID != a2.ID {
		t.Fatalf("a2's ratings %+v", theirs)
	}

	long, err := f.db.RatingsLong(ctx, f.study)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		item      string
		annotator int64
		fid, nat  int
		leak      bool
	}{{"i1", a1.ID, 2, 3, true}, {"i1", a2.ID, 1, 2, true}, {"i2", a1.ID, 5, 5, false}}
	if len(long) != len(want) {
		t.Fatalf("ratings.csv rows %+v", long)
	}
	for i, w := range want {
		r := long[i]
		if r.ItemID != w.item || r.AnnotatorID != w.annotator || r.Fidelity != w.fid || r.Naturalness != w.nat || r.Leakage != w.leak || r.TaskID != "task01" {
			t.Errorf("row %d %+v; want %+v", i, r, w)
		}
	}

	for _, bad := range []audit.Rating{
		{AnnotatorID: a1.ID, ItemID: "i1", Fidelity: 0, Naturalness: 3},
		{AnnotatorID: a1.ID, ItemID: "i1", Fidelity: 3, Naturalness: 6},
	} {
		_, err := f.db.SaveRating(ctx, bad)
		wantErr(t, err, audit.ErrInvalid)
	}
	_, err = f.db.SaveRating(ctx, audit.Rating{AnnotatorID: a1.ID, ItemID: "nope", Fidelity: 3, Naturalness: 3})
	wantErr(t, err, audit.ErrNotFound)
	if it, err := f.db.RatingItem(ctx, "i1"); err != nil || string(it.Payload) != `{"transcript": "Hi, I need a quote."}` {
		t.Errorf("RatingItem = %s, %v", it.Payload, err)
	}
}
