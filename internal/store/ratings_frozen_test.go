package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// A rated item is frozen: re-storing it unchanged is fine, changing it is a conflict.
func TestRatedItemsAreFrozen(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	item := audit.RatingItem{ID: "it-1", TaskID: "t", PlanID: "open", Variant: "1", Payload: json.RawMessage(`{"transcript":"Hi."}`)}
	if err := db.PutRatingItems(ctx, []audit.RatingItem{item}); err != nil {
		t.Fatal(err)
	}
	changed := item
	changed.Payload = json.RawMessage(`{"transcript":"Hi. My VIN is 4S4BSANC2K3318820."}`)
	if err := db.PutRatingItems(ctx, []audit.RatingItem{changed}); err != nil {
		t.Fatalf("an unrated item may still change: %v", err)
	}
	if err := db.PutRatingItems(ctx, []audit.RatingItem{item}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateStudy(ctx, audit.Study{ID: "s", Name: "s", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	a, err := db.CreateAnnotator(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveRating(ctx, audit.Rating{AnnotatorID: a.ID, ItemID: "it-1", Fidelity: 4, Naturalness: 5}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutRatingItems(ctx, []audit.RatingItem{item}); err != nil {
		t.Errorf("storing a rated item unchanged: %v", err)
	}
	if err := db.PutRatingItems(ctx, []audit.RatingItem{changed}); !errors.Is(err, audit.ErrConflict) {
		t.Errorf("changing a rated item: %v, want ErrConflict", err)
	}
	got, _ := db.RatingItem(ctx, "it-1")
	if string(got.Payload) != `{"transcript": "Hi."}` && string(got.Payload) != `{"transcript":"Hi."}` {
		t.Errorf("payload now %s", got.Payload)
	}
}
