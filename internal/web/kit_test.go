package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/audit/audittest"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/web"
)

// kitStore is every record the tests use: what the app and the console read and write, and what
// the tests set up and check. The PostgreSQL store and the in-memory audittest.Store both are one.
type kitStore interface {
	web.Store
	console.Store
	CreateStudy(ctx context.Context, s audit.Study) (audit.Study, error)
	AddPlan(ctx context.Context, studyID string, rows []audit.PlanRow) (int, error)
	Assignment(ctx context.Context, id int64) (audit.Assignment, error)
	CreateParticipant(ctx context.Context, np audit.NewParticipant) (audit.Participant, error)
	Participants(ctx context.Context, studyID string) ([]audit.Participant, error)
	CreateExperimenter(ctx context.Context, name, password string) (audit.Experimenter, error)
	ExperimenterByName(ctx context.Context, name string) (audit.Experimenter, error)
	IssueSignInLink(ctx context.Context, experimenterID int64, label string, ttl time.Duration) (string, error)
	CreateAnnotator(ctx context.Context, studyID string) (audit.Annotator, error)
	PutRatingItems(ctx context.Context, items []audit.RatingItem) error
	RatingsLong(ctx context.Context, studyID string) ([]audit.RatingRow, error)
	EndSession(ctx context.Context, id, reason string) error
}

var (
	_ kitStore = (*store.DB)(nil)
	_ kitStore = (*audittest.Store)(nil)
)

// backend is a kind of store a kit runs on.
type backend struct {
	name string
	open func(testing.TB) kitStore
}

var (
	postgres = backend{"postgres", func(tb testing.TB) kitStore { return storetest.New(tb) }}
	memory   = backend{"memory", func(testing.TB) kitStore { return audittest.New() }}
)

// onEachStore runs an HTTP test on the in-memory store and on PostgreSQL, as subtests named after
// the backend: what the app does must not depend on which store holds the records.
func onEachStore(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range []backend{memory, postgres} {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}
