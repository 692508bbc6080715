// Package audittest is an in-memory implementation of a study's records, for tests of the code
// above the store: the web app and the console run on it without PostgreSQL. It keeps the rules
// of internal/store that those layers rely on — link tokens kept as digests, consent given once,
// plan slots bound to one participant and excluded cells returned to a pool, attempts, append-only
// event logs, one-time sign-in links, idle and absolute session limits, frozen rated items,
// liveness locks — and returns the same audit errors. The web tests run on both this and the real
// store, which keeps the two alike.
package audittest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Store holds a study's records in memory. It is safe for concurrent use; the zero value is not
// ready, use New.
type Store struct {
	// Now is the wall clock stamped on records (time.Now when nil).
	Now func() time.Time

	mu            sync.Mutex
	studies       map[string]*audit.Study
	systems       map[string]*audit.System
	tasks         map[taskKey]audit.TaskVersion
	slots         map[string][]*slot // per study, in plan order
	assignments   []*audit.Assignment
	participants  []*participant
	sessions      map[string]*audit.Session
	sessionOrder  []string
	events        map[string][]trace.Event
	recordings    map[string]map[string]audit.Recording
	scores        map[string][]audit.Score
	experimenters []*experimenter
	links         map[[32]byte]*signInLink
	xsessions     map[[32]byte]*xsession
	annotators    []*annotator
	items         map[string]audit.RatingItem
	ratings       map[ratingKey]audit.Rating
	locks         map[string]bool
}

type taskKey struct {
	id      string
	version int
}

type slot struct {
	label       string
	participant int64
}

type participant struct {
	p        audit.Participant // Token empty: only its digest is kept
	digest   [32]byte
	deadline time.Time // consent deadline, kept after consent
}

type experimenter struct {
	x      audit.Experimenter
	digest [32]byte // of the password: a test double, not a password store
}

type signInLink struct {
	experimenter      int64
	expires           time.Time
	consumed, revoked bool
}

type xsession struct {
	s        audit.ExperimenterSession
	lastSeen time.Time
	revoked  bool
}

type annotator struct {
	a      audit.Annotator
	digest [32]byte
}

type ratingKey struct {
	annotator int64
	item      string
}

// New returns an empty store.
func New() *Store {
	return &Store{studies: map[string]*audit.Study{}, systems: map[string]*audit.System{}, tasks: map[taskKey]audit.TaskVersion{},
		slots: map[string][]*slot{}, sessions: map[string]*audit.Session{}, events: map[string][]trace.Event{},
		recordings: map[string]map[string]audit.Recording{}, scores: map[string][]audit.Score{}, links: map[[32]byte]*signInLink{},
		xsessions: map[[32]byte]*xsession{}, items: map[string]audit.RatingItem{}, ratings: map[ratingKey]audit.Rating{},
		locks: map[string]bool{}}
}

// The web app hands the store strings that point into Fiber's request buffers, which are reused
// once the request is answered: a database copies what it keeps, and so must this store (clone).
func clone(ss ...*string) {
	for _, s := range ss {
		*s = strings.Clone(*s)
	}
}

func cloneExt(e audit.ExternalIDs) audit.ExternalIDs {
	clone(&e.ProlificPID, &e.StudyID, &e.SessionID)
	return e
}

// stamp is the wall time in UTC at the store's (PostgreSQL's) microsecond precision.
func (s *Store) stamp() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}

func newToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func digest(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// plausibleToken rejects strings that cannot be a link token, as the store does.
func plausibleToken(t string) bool { return len(t) >= 22 && len(t) <= 128 }

// Studies, systems and tasks.

// CreateStudy stores a new study; an existing ID is ErrConflict.
func (s *Store) CreateStudy(_ context.Context, st audit.Study) (audit.Study, error) {
	st, err := st.Checked()
	if err != nil {
		return audit.Study{}, err
	}
	clone(&st.ID, &st.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.studies[st.ID] != nil {
		return audit.Study{}, audit.Errorf(audit.ErrConflict, "create study %s", st.ID)
	}
	st.CreatedAt = s.stamp()
	s.studies[st.ID] = &st
	return st, nil
}

// Study returns the study with id.
func (s *Store) Study(_ context.Context, id string) (audit.Study, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.studies[id]
	if st == nil {
		return audit.Study{}, audit.Errorf(audit.ErrNotFound, "study %s", id)
	}
	return *st, nil
}

// Studies lists every study, oldest first.
func (s *Store) Studies(_ context.Context) ([]audit.Study, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := copies(s.studies)
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SetStudyConfig replaces a study's config.
func (s *Store) SetStudyConfig(_ context.Context, id string, config json.RawMessage) error {
	cfg, err := audit.ConfigObject(config, "study config")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.studies[id]
	if st == nil {
		return audit.Errorf(audit.ErrNotFound, "study %s", id)
	}
	st.Config = cfg
	return nil
}

// UpsertSystem stores sys, or updates an existing system with the same label; an empty alias gets
// the next free "Agent A", "Agent B", ….
func (s *Store) UpsertSystem(_ context.Context, sys audit.System) (audit.System, error) {
	sys, err := sys.Checked()
	if err != nil {
		return audit.System{}, err
	}
	clone(&sys.Label, &sys.Alias, &sys.Family)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.systems[sys.Label]
	if sys.Alias == "" && old != nil {
		sys.Alias = old.Alias
	}
	for n := len(s.systems); sys.Alias == ""; n++ {
		alias := "Agent " + letters(n)
		if !slices.ContainsFunc(mapValues(s.systems), func(o *audit.System) bool { return o.Alias == alias }) {
			sys.Alias = alias
		}
	}
	for _, o := range s.systems {
		if o.Label != sys.Label && o.Alias == sys.Alias {
			return audit.System{}, audit.Errorf(audit.ErrConflict, "store system %s", sys.Label)
		}
	}
	sys.CreatedAt = s.stamp()
	if old != nil {
		sys.CreatedAt = old.CreatedAt
	}
	s.systems[sys.Label] = &sys
	return sys, nil
}

// letters numbers aliases like spreadsheet columns: 0 → A, 25 → Z, 26 → AA.
func letters(n int) string {
	out := ""
	for n++; n > 0; n = (n - 1) / 26 {
		out = string(rune('A'+(n-1)%26)) + out
	}
	return out
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// copies returns copies of the records m points to, in no order (empty, not nil, for none).
func copies[K comparable, V any](m map[K]*V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	return out
}

// System returns the system with label.
func (s *Store) System(_ context.Context, label string) (audit.System, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sys := s.systems[label]; sys != nil {
		return *sys, nil
	}
	return audit.System{}, audit.Errorf(audit.ErrNotFound, "system %s", label)
}

// Systems lists every system by alias.
func (s *Store) Systems(_ context.Context) ([]audit.System, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := copies(s.systems)
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Alias) != len(out[j].Alias) {
			return len(out[i].Alias) < len(out[j].Alias)
		}
		return out[i].Alias < out[j].Alias
	})
	return out, nil
}

// PutTask stores a version of a task; the same bytes again are a no-op, other bytes ErrConflict.
func (s *Store) PutTask(_ context.Context, id string, version int, spec []byte) (audit.TaskVersion, error) {
	t, err := audit.NewTaskVersion(strings.Clone(id), version, spec)
	if err != nil {
		return audit.TaskVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if stored, ok := s.tasks[taskKey{id, version}]; ok {
		if stored.SHA256 != t.SHA256 {
			return audit.TaskVersion{}, audit.Errorf(audit.ErrConflict, "task %s version %d is stored with other content: bump the task's version", id, version)
		}
		return stored, nil
	}
	t.LoadedAt = s.stamp()
	s.tasks[taskKey{id, version}] = t
	return t, nil
}

// Task returns one version of a task.
func (s *Store) Task(_ context.Context, id string, version int) (audit.TaskVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tasks[taskKey{id, version}]; ok {
		return t, nil
	}
	return audit.TaskVersion{}, audit.Errorf(audit.ErrNotFound, "task %s version %d", id, version)
}

// Plans and assignments.

// AddPlan adds plan rows to a study, keeping rows whose (slot, position) exist as they are; it
// returns how many rows it added.
func (s *Store) AddPlan(_ context.Context, studyID string, rows []audit.PlanRow) (int, error) {
	if err := audit.CheckPlan(rows); err != nil {
		return 0, err
	}
	order := audit.PlanSlots(rows)
	rows = slices.Clone(rows)
	for i := range rows {
		clone(&rows[i].Slot, &rows[i].Task, &rows[i].System, &rows[i].Condition)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.studies[studyID] == nil {
		return 0, audit.Errorf(audit.ErrNotFound, "add plan to study %s: unknown study", studyID)
	}
	for i, r := range rows {
		if s.systems[r.System] == nil {
			return 0, audit.Errorf(audit.ErrNotFound, "plan row %d (%s position %d): unknown system", i+1, r.Slot, r.Position)
		}
	}
	for _, label := range order {
		if s.slot(studyID, label) == nil {
			s.slots[studyID] = append(s.slots[studyID], &slot{label: label})
		}
	}
	now, added := s.stamp(), 0
	for i, r := range rows {
		at := func(match func(a *audit.Assignment) bool) *audit.Assignment {
			for _, a := range s.assignments {
				if a.StudyID == studyID && a.Slot == r.Slot && match(a) {
					return a
				}
			}
			return nil
		}
		if clash := at(func(a *audit.Assignment) bool { return a.Task == r.Task && a.Position != r.Position }); clash != nil {
			if at(func(a *audit.Assignment) bool { return a.Position == r.Position }) == nil {
				return 0, audit.Errorf(audit.ErrInvalid, "plan row %d: %s already meets task %s at position %d", i+1, r.Slot, r.Task, clash.Position)
			}
			continue
		}
		if at(func(a *audit.Assignment) bool { return a.Position == r.Position }) != nil {
			continue
		}
		s.newAssignment(audit.Assignment{StudyID: studyID, Slot: r.Slot, ParticipantID: s.slot(studyID, r.Slot).participant,
			Position: r.Position, Task: r.Task, System: r.System, Repeat: r.Repeat, Condition: r.Condition, CreatedAt: now})
		added++
	}
	return added, nil
}

func (s *Store) slot(studyID, label string) *slot {
	for _, sl := range s.slots[studyID] {
		if sl.label == label {
			return sl
		}
	}
	return nil
}

// newAssignment stores a pending assignment under the next id.
func (s *Store) newAssignment(a audit.Assignment) *audit.Assignment {
	a.ID, a.Status = int64(len(s.assignments)+1), audit.StatusPending
	s.assignments = append(s.assignments, &a)
	return &a
}

func (s *Store) assignment(id int64) *audit.Assignment {
	if id < 1 || id > int64(len(s.assignments)) {
		return nil
	}
	return s.assignments[id-1]
}

func (s *Store) participant(id int64) *participant {
	if id < 1 || id > int64(len(s.participants)) {
		return nil
	}
	return s.participants[id-1]
}

// mine returns the participant's assignments in their order.
func (s *Store) mine(participantID int64) []*audit.Assignment {
	var out []*audit.Assignment
	for _, a := range s.assignments {
		if a.ParticipantID == participantID {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// ClaimNext hands the participant their running assignment, else their first pending one, else —
// for a participant not bound to a plan slot yet — binds the study's first free slot and hands its
// first assignment; ErrNoAssignment when nothing is left.
func (s *Store) ClaimNext(_ context.Context, participantID int64) (audit.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.participant(participantID)
	if p == nil {
		return audit.Assignment{}, audit.Errorf(audit.ErrNotFound, "claim next assignment of participant %d", participantID)
	}
	for _, a := range s.mine(participantID) {
		if a.Status == audit.StatusRunning {
			return *a, nil
		}
	}
	now := s.stamp()
	if a := s.claimPending(participantID, now); a != nil {
		return *a, nil
	}
	for _, sl := range s.slots[p.p.StudyID] {
		if sl.participant == participantID {
			return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "participant %d", participantID)
		}
	}
	if s.bindFreeSlot(p, now) == "" {
		return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "participant %d", participantID)
	}
	if a := s.claimPending(participantID, now); a != nil {
		return *a, nil
	}
	return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "participant %d", participantID)
}

func (s *Store) claimPending(participantID int64, now time.Time) *audit.Assignment {
	for _, a := range s.mine(participantID) {
		if a.Status == audit.StatusPending {
			a.Status, a.ClaimedAt = audit.StatusRunning, now
			return a
		}
	}
	return nil
}

// bindFreeSlot binds the study's first slot with pending work and no task the participant met;
// it returns the slot's label, "" when there is none.
func (s *Store) bindFreeSlot(p *participant, _ time.Time) string {
	met := map[string]bool{}
	for _, a := range s.mine(p.p.ID) {
		met[a.Task] = true
	}
	for _, sl := range s.slots[p.p.StudyID] {
		if sl.participant != 0 {
			continue
		}
		pending, clash := false, false
		for _, a := range s.assignments {
			if a.StudyID == p.p.StudyID && a.Slot == sl.label {
				pending = pending || a.Status == audit.StatusPending
				clash = clash || met[a.Task]
			}
		}
		if !pending || clash {
			continue
		}
		sl.participant = p.p.ID
		for _, a := range s.assignments {
			if a.StudyID == p.p.StudyID && a.Slot == sl.label && a.ParticipantID == 0 {
				a.ParticipantID = p.p.ID
			}
		}
		return sl.label
	}
	return ""
}

// HandCell appends one cell of the study's pool to the participant's sequence, coverage first
// (first runs before anchor repeats, then the least-run cells), never a task they met nor a system
// they met maxPerSystem times (when > 0).
func (s *Store) HandCell(_ context.Context, participantID int64, maxPerSystem int) (audit.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.participant(participantID)
	if p == nil {
		return audit.Assignment{}, audit.Errorf(audit.ErrNotFound, "hand a cell to participant %d", participantID)
	}
	mine := s.mine(participantID)
	met, perSystem, last := map[string]bool{}, map[string]int{}, 0
	for _, a := range mine {
		if a.Status == audit.StatusPending || a.Status == audit.StatusRunning {
			return audit.Assignment{}, audit.Errorf(audit.ErrConflict, "participant %d still has unfinished assignments", participantID)
		}
		met[a.Task] = true
		if a.Status != audit.StatusExcluded {
			perSystem[a.System]++
		}
		last = max(last, a.Position)
	}
	runs := func(c *audit.Assignment) int {
		n := 0
		for _, d := range s.assignments {
			if d.StudyID == c.StudyID && d.Task == c.Task && d.System == c.System && (d.Status == audit.StatusDone || d.Status == audit.StatusRunning) {
				n++
			}
		}
		return n
	}
	var best *audit.Assignment
	for _, c := range s.assignments {
		if c.StudyID != p.p.StudyID || c.Status != audit.StatusPending || c.ParticipantID != 0 || c.Slot != "" || met[c.Task] ||
			maxPerSystem > 0 && perSystem[c.System] >= maxPerSystem {
			continue
		}
		if best == nil || c.Repeat < best.Repeat || c.Repeat == best.Repeat && runs(c) < runs(best) {
			best = c
		}
	}
	if best == nil {
		return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "pool of study for participant %d", participantID)
	}
	best.ParticipantID, best.Position = participantID, last+1
	return *best, nil
}

// Assignment returns one assignment.
func (s *Store) Assignment(_ context.Context, id int64) (audit.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.assignment(id); a != nil {
		return *a, nil
	}
	return audit.Assignment{}, audit.Errorf(audit.ErrNotFound, "assignment %d", id)
}

// ParticipantAssignments lists a participant's assignments in their order.
func (s *Store) ParticipantAssignments(_ context.Context, participantID int64) ([]audit.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []audit.Assignment{}
	for _, a := range s.mine(participantID) {
		out = append(out, *a)
	}
	return out, nil
}

// Assignments lists a study's assignments: plan slots in order, then pool cells.
func (s *Store) Assignments(_ context.Context, studyID string) ([]audit.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ord := map[string]int{}
	for i, sl := range s.slots[studyID] {
		ord[sl.label] = i
	}
	out := []audit.Assignment{}
	for _, a := range s.assignments {
		if a.StudyID == studyID {
			out = append(out, *a)
		}
	}
	rank := func(a audit.Assignment) int {
		if a.Slot == "" {
			return len(ord)
		}
		return ord[a.Slot]
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Progress counts a study's assignments by state, overall, per system and per task.
func (s *Store) Progress(ctx context.Context, studyID string) (audit.StudyProgress, error) {
	if _, err := s.Study(ctx, studyID); err != nil {
		return audit.StudyProgress{}, err
	}
	as, _ := s.Assignments(ctx, studyID)
	sp := audit.StudyProgress{BySystem: map[string]audit.Progress{}, ByTask: map[string]audit.Progress{}}
	for _, a := range as {
		sp.Study.Add(a.Status, 1)
		bs, bt := sp.BySystem[a.System], sp.ByTask[a.Task]
		bs.Add(a.Status, 1)
		bt.Add(a.Status, 1)
		sp.BySystem[a.System], sp.ByTask[a.Task] = bs, bt
	}
	return sp, nil
}
