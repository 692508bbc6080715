package audittest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
)

// Participants.

// CreateParticipant adds a participant to a study with a fresh unguessable token.
func (s *Store) CreateParticipant(_ context.Context, np audit.NewParticipant) (audit.Participant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.studies[np.StudyID] == nil {
		return audit.Participant{}, audit.Errorf(audit.ErrNotFound, "create participant in study %s: unknown study", np.StudyID)
	}
	if np.External.ProlificPID != "" && s.byProlificPID(np.StudyID, np.External.ProlificPID) != nil {
		return audit.Participant{}, audit.Errorf(audit.ErrConflict, "create participant in study %s", np.StudyID)
	}
	np.External = cloneExt(np.External)
	token := newToken(24)
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.UTC().Truncate(time.Microsecond)
	}
	p := &participant{p: audit.Participant{ID: int64(len(s.participants) + 1), StudyID: np.StudyID, External: np.External,
		ExpiresAt: at(np.ExpiresAt), ConsentDeadline: at(np.ConsentDeadline), CreatedAt: s.stamp()},
		digest: digest(token), deadline: at(np.ConsentDeadline)}
	s.participants = append(s.participants, p)
	out := p.p
	out.Token = token
	return out, nil
}

func (s *Store) byProlificPID(studyID, pid string) *participant {
	for _, p := range s.participants {
		if p.p.StudyID == studyID && p.p.External.ProlificPID == pid {
			return p
		}
	}
	return nil
}

// ParticipantByToken returns the participant whose link token is exactly token: ErrNotFound for
// any other string, ErrExpired once the token has expired, ErrLapsed (also ErrExpired) for an open
// enrollment that lapsed without consent.
func (s *Store) ParticipantByToken(_ context.Context, token string) (audit.Participant, error) {
	if !plausibleToken(token) {
		return audit.Participant{}, audit.Errorf(audit.ErrNotFound, "participant token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := digest(token)
	for _, p := range s.participants {
		if p.digest != d {
			continue
		}
		now := s.stamp()
		if !p.p.ExpiresAt.IsZero() && !now.Before(p.p.ExpiresAt) {
			return audit.Participant{}, audit.Errorf(audit.ErrExpired, "participant token")
		}
		if p.p.Lapsed(now) {
			return audit.Participant{}, &audit.Error{Msg: "participant: " + audit.ErrLapsed.Error(), Kind: audit.ErrLapsed, Cause: audit.ErrExpired}
		}
		out := p.p
		out.Token = token
		return out, nil
	}
	return audit.Participant{}, audit.Errorf(audit.ErrNotFound, "participant token")
}

// Participant returns the participant with id.
func (s *Store) Participant(_ context.Context, id int64) (audit.Participant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.participant(id); p != nil {
		return p.p, nil
	}
	return audit.Participant{}, audit.Errorf(audit.ErrNotFound, "participant %d", id)
}

// Participants lists a study's participants in creation order.
func (s *Store) Participants(_ context.Context, studyID string) ([]audit.Participant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []audit.Participant{}
	for _, p := range s.participants {
		if p.p.StudyID == studyID {
			out = append(out, p.p)
		}
	}
	return out, nil
}

// SetExternalIDs records the recruiting platform's ids; each is fixed once recorded.
func (s *Store) SetExternalIDs(_ context.Context, participantID int64, ext audit.ExternalIDs) error {
	if err := ext.Check(); err != nil {
		return err
	}
	ext = cloneExt(ext)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.participant(participantID)
	if p == nil {
		return audit.Errorf(audit.ErrNotFound, "participant %d", participantID)
	}
	e := &p.p.External
	if e.ProlificPID == "" && ext.ProlificPID != "" {
		if other := s.byProlificPID(p.p.StudyID, ext.ProlificPID); other != nil && other != p {
			return audit.Errorf(audit.ErrConflict, "record external ids")
		}
		e.ProlificPID = ext.ProlificPID
	}
	if e.StudyID == "" {
		e.StudyID = ext.StudyID
	}
	if e.SessionID == "" {
		e.SessionID = ext.SessionID
	}
	return nil
}

// RecordConsent records consent to text once: the same text again returns the first record, a
// different one is ErrConflict.
func (s *Store) RecordConsent(_ context.Context, participantID int64, text string) (audit.Consent, error) {
	sum := sha256.Sum256([]byte(text))
	c := audit.Consent{At: s.stamp(), TextSHA256: hex.EncodeToString(sum[:])}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.participant(participantID)
	if p == nil {
		return audit.Consent{}, audit.Errorf(audit.ErrNotFound, "record consent of participant %d", participantID)
	}
	if p.p.Consent == nil {
		p.p.Consent, p.p.ConsentDeadline = &c, time.Time{}
	}
	if p.p.Consent.TextSHA256 != c.TextSHA256 {
		return audit.Consent{}, audit.Errorf(audit.ErrConflict, "participant %d consented to another text earlier", participantID)
	}
	return *p.p.Consent, nil
}

// RecordMicCheck stores the latest microphone check.
func (s *Store) RecordMicCheck(_ context.Context, participantID int64, mc audit.MicCheck) error {
	if mc.At.IsZero() {
		mc.At = s.stamp()
	}
	mc.At = mc.At.UTC().Truncate(time.Microsecond)
	clone(&mc.Device)
	if len(mc.Details) > 0 && !json.Valid(mc.Details) {
		return audit.Errorf(audit.ErrInvalid, "mic check details: want JSON")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.participant(participantID)
	if p == nil {
		return audit.Errorf(audit.ErrNotFound, "participant %d", participantID)
	}
	p.p.MicCheck = &mc
	return nil
}

// Enroll enrolls a recruiting platform's participant through a study's open link: lapsed
// enrollments give their slots back first; a returning id gets a fresh token (the old link stops
// working); a new one is refused at MaxPending enrollments waiting for consent
// (ErrEnrollmentFull) or with no free plan slot (ErrNoAssignment). As in the store, all of it is
// one transaction: a refusal changes nothing.
func (s *Store) Enroll(_ context.Context, studyID string, ext audit.ExternalIDs, lim audit.EnrollLimits) (audit.Enrollment, error) {
	if ext.ProlificPID == "" {
		return audit.Enrollment{}, audit.Errorf(audit.ErrInvalid, "enroll: the recruiting id is empty")
	}
	if lim.ConsentTimeout <= 0 {
		lim.ConsentTimeout = 30 * time.Minute
	}
	ext = cloneExt(ext)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.studies[studyID] == nil {
		return audit.Enrollment{}, audit.Errorf(audit.ErrNotFound, "enroll in study %s", studyID)
	}
	now := s.stamp()
	rebind := s.releaseLapsed(studyID, now)
	deadline, token := now.Add(lim.ConsentTimeout), newToken(24)
	p := s.byProlificPID(studyID, ext.ProlificPID)
	pending := 0
	for _, q := range s.participants {
		if q != p && q.p.StudyID == studyID && q.p.Consent == nil && q.deadline.After(now) {
			pending++
		}
	}
	if lim.MaxPending > 0 && (p == nil || p.p.Consent == nil) && pending >= lim.MaxPending {
		rebind()
		return audit.Enrollment{}, audit.Errorf(audit.ErrEnrollmentFull, "study %s", studyID)
	}
	out := audit.Enrollment{Resumed: p != nil}
	if p == nil {
		p = &participant{p: audit.Participant{ID: int64(len(s.participants) + 1), StudyID: studyID, External: ext, CreatedAt: now}}
	}
	for _, sl := range s.slots[studyID] {
		if sl.participant == p.p.ID {
			out.Slot = sl.label
		}
	}
	if out.Slot == "" && p.p.Consent == nil {
		if out.Slot = s.bindFreeSlot(p, now); out.Slot == "" {
			rebind()
			return audit.Enrollment{}, audit.Errorf(audit.ErrNoAssignment, "study %s has no free plan slot", studyID)
		}
	}
	if !out.Resumed {
		s.participants = append(s.participants, p)
	}
	if p.p.Consent == nil {
		p.deadline, p.p.ConsentDeadline = deadline, deadline
	}
	p.digest = digest(token)
	out.Participant = p.p
	out.Participant.Token = token
	return out, nil
}

// releaseLapsed unbinds the plan slots of enrollments whose consent deadline passed without
// consent and of which nothing has run; the function it returns binds them again.
func (s *Store) releaseLapsed(studyID string, now time.Time) (undo func()) {
	var undos []func()
	for _, sl := range s.slots[studyID] {
		p := s.participant(sl.participant)
		if p == nil || p.p.Consent != nil || p.deadline.IsZero() || p.deadline.After(now) {
			continue
		}
		started := false
		for _, a := range s.mine(p.p.ID) {
			started = started || a.Status != audit.StatusPending
		}
		if started {
			continue
		}
		sl, id := sl, p.p.ID
		sl.participant = 0
		var freed []*audit.Assignment
		for _, a := range s.assignments {
			if a.ParticipantID == id && a.Status == audit.StatusPending && a.Slot != "" {
				a.ParticipantID = 0
				freed = append(freed, a)
			}
		}
		undos = append(undos, func() {
			sl.participant = id
			for _, a := range freed {
				a.ParticipantID = id
			}
		})
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}
}

// Experimenters.

// CreateExperimenter adds an experimenter with a password of at least 10 characters.
func (s *Store) CreateExperimenter(_ context.Context, name, password string) (audit.Experimenter, error) {
	if strings.TrimSpace(name) == "" {
		return audit.Experimenter{}, audit.Errorf(audit.ErrInvalid, "experimenter name is empty")
	}
	if err := audit.CheckPassword(name, password); err != nil {
		return audit.Experimenter{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.experimenters {
		if x.x.Name == name {
			return audit.Experimenter{}, audit.Errorf(audit.ErrConflict, "create experimenter %s", name)
		}
	}
	x := &experimenter{x: audit.Experimenter{ID: int64(len(s.experimenters) + 1), Name: strings.Clone(name), CreatedAt: s.stamp()}, digest: digest(password)}
	s.experimenters = append(s.experimenters, x)
	return x.x, nil
}

// CheckExperimenterPassword returns the experimenter if name and password match; any mismatch is
// ErrUnauthorized.
func (s *Store) CheckExperimenterPassword(_ context.Context, name, password string) (audit.Experimenter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.experimenters {
		if x.x.Name == name && x.digest == digest(password) {
			return x.x, nil
		}
	}
	return audit.Experimenter{}, audit.Errorf(audit.ErrUnauthorized, "sign in")
}

// ExperimenterByName returns an experimenter account by name.
func (s *Store) ExperimenterByName(_ context.Context, name string) (audit.Experimenter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.experimenters {
		if x.x.Name == name {
			return x.x, nil
		}
	}
	return audit.Experimenter{}, audit.Errorf(audit.ErrNotFound, "experimenter %s", name)
}

// IssueSignInLink mints a one-time sign-in link token, usable once within ttl (0: the default).
func (s *Store) IssueSignInLink(_ context.Context, experimenterID int64, _ string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = audit.DefaultSignInLinkTTL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if experimenterID < 1 || experimenterID > int64(len(s.experimenters)) {
		return "", audit.Errorf(audit.ErrNotFound, "issue sign-in link: unknown experimenter")
	}
	token := "xl_" + newToken(32)
	s.links[digest(token)] = &signInLink{experimenter: experimenterID, expires: s.stamp().Add(ttl)}
	return token, nil
}

// ConsumeSignInLink spends a sign-in link once: used, expired or revoked is ErrExpired, unknown
// ErrUnauthorized.
func (s *Store) ConsumeSignInLink(_ context.Context, token string) (audit.Experimenter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.links[digest(token)]
	if l == nil {
		return audit.Experimenter{}, audit.Errorf(audit.ErrUnauthorized, "sign-in link")
	}
	if l.consumed || l.revoked || !l.expires.After(s.stamp()) {
		return audit.Experimenter{}, audit.Errorf(audit.ErrExpired, "sign-in link used before or expired")
	}
	l.consumed = true
	return s.experimenters[l.experimenter-1].x, nil
}

// CreateExperimenterSession starts a session for a signed-in experimenter and returns its secret.
func (s *Store) CreateExperimenterSession(_ context.Context, experimenterID int64, via string, lim audit.SessionLimits) (string, error) {
	lim = lim.WithDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if experimenterID < 1 || experimenterID > int64(len(s.experimenters)) {
		return "", audit.Errorf(audit.ErrNotFound, "create experimenter session: unknown experimenter")
	}
	token, now := "xs_"+newToken(32), s.stamp()
	s.xsessions[digest(token)] = &xsession{s: audit.ExperimenterSession{Experimenter: s.experimenters[experimenterID-1].x, Via: strings.Clone(via),
		CreatedAt: now, ExpiresAt: now.Add(lim.Absolute), Idle: max(lim.Idle.Truncate(time.Second), time.Second)}, lastSeen: now}
	return token, nil
}

// ExperimenterBySession returns the session a cookie value opens and resets its idle timer;
// unknown is ErrUnauthorized, revoked, idle or expired ErrExpired.
func (s *Store) ExperimenterBySession(_ context.Context, token string) (audit.ExperimenterSession, error) {
	if !strings.HasPrefix(token, "xs_") || len(token) > 128 {
		return audit.ExperimenterSession{}, audit.Errorf(audit.ErrUnauthorized, "experimenter session")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.xsessions[digest(token)]
	if x == nil {
		return audit.ExperimenterSession{}, audit.Errorf(audit.ErrUnauthorized, "experimenter session")
	}
	now := s.stamp()
	if x.revoked || !x.s.ExpiresAt.After(now) || !x.lastSeen.Add(x.s.Idle).After(now) {
		return audit.ExperimenterSession{}, audit.Errorf(audit.ErrExpired, "experimenter session ended")
	}
	x.lastSeen = now
	return x.s, nil
}

// RevokeExperimenterSession ends a session at once; an unknown or ended one is not an error.
func (s *Store) RevokeExperimenterSession(_ context.Context, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.xsessions[digest(token)]; x != nil {
		x.revoked = true
	}
	return nil
}

// Annotators and ratings.

// CreateAnnotator adds an annotator to a study at the next seed position.
func (s *Store) CreateAnnotator(_ context.Context, studyID string) (audit.Annotator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.studies[studyID] == nil {
		return audit.Annotator{}, audit.Errorf(audit.ErrNotFound, "create annotator in study %s", studyID)
	}
	pos := 0
	for _, a := range s.annotators {
		if a.a.StudyID == studyID {
			pos = max(pos, a.a.SeedPosition+1)
		}
	}
	token := newToken(24)
	a := &annotator{a: audit.Annotator{ID: int64(len(s.annotators) + 1), StudyID: strings.Clone(studyID), SeedPosition: pos, CreatedAt: s.stamp()}, digest: digest(token)}
	s.annotators = append(s.annotators, a)
	out := a.a
	out.Token = token
	return out, nil
}

// AnnotatorByToken returns the annotator whose link token is exactly token (else ErrNotFound).
func (s *Store) AnnotatorByToken(_ context.Context, token string) (audit.Annotator, error) {
	if !plausibleToken(token) {
		return audit.Annotator{}, audit.Errorf(audit.ErrNotFound, "annotator token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.annotators {
		if a.digest == digest(token) {
			out := a.a
			out.Token = token
			return out, nil
		}
	}
	return audit.Annotator{}, audit.Errorf(audit.ErrNotFound, "annotator token")
}

// PutRatingItems stores the rating set; an item that has ratings cannot change (ErrConflict).
func (s *Store) PutRatingItems(_ context.Context, items []audit.RatingItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]audit.RatingItem{}
	for _, it := range items {
		it, err := it.Checked()
		if err != nil {
			return err
		}
		clone(&it.ID, &it.TaskID, &it.PlanID, &it.Variant)
		if old, ok := s.items[it.ID]; ok && s.rated(it.ID) &&
			(old.TaskID != it.TaskID || old.PlanID != it.PlanID || old.Variant != it.Variant || !sameJSON(old.Payload, it.Payload)) {
			return audit.Errorf(audit.ErrConflict, "rating item %s has ratings and its content differs: a rated item cannot change; give the changed item a new id", it.ID)
		}
		it.CreatedAt = s.stamp()
		if old, ok := s.items[it.ID]; ok {
			it.CreatedAt = old.CreatedAt
		}
		next[it.ID] = it
	}
	for id, it := range next {
		s.items[id] = it
	}
	return nil
}

func (s *Store) rated(item string) bool {
	for k := range s.ratings {
		if k.item == item {
			return true
		}
	}
	return false
}

// sameJSON compares documents as PostgreSQL's jsonb does: by value, not by spelling.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// RatingItem returns one item.
func (s *Store) RatingItem(_ context.Context, id string) (audit.RatingItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it, ok := s.items[id]; ok {
		return it, nil
	}
	return audit.RatingItem{}, audit.Errorf(audit.ErrNotFound, "rating item %s", id)
}

// SaveRating stores an annotator's rating of an item, replacing their earlier one.
func (s *Store) SaveRating(_ context.Context, r audit.Rating) (audit.Rating, error) {
	if err := r.Check(); err != nil {
		return audit.Rating{}, err
	}
	clone(&r.ItemID, &r.Note)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.AnnotatorID < 1 || r.AnnotatorID > int64(len(s.annotators)) {
		return audit.Rating{}, audit.Errorf(audit.ErrNotFound, "save rating of item %s: unknown annotator", r.ItemID)
	}
	if _, ok := s.items[r.ItemID]; !ok {
		return audit.Rating{}, audit.Errorf(audit.ErrNotFound, "save rating of item %s: unknown rating item", r.ItemID)
	}
	k := ratingKey{r.AnnotatorID, r.ItemID}
	now := s.stamp()
	r.CreatedAt, r.UpdatedAt = now, now
	if old, ok := s.ratings[k]; ok {
		r.CreatedAt = old.CreatedAt
	}
	s.ratings[k] = r
	return r, nil
}

// AnnotatorRatings returns only this annotator's ratings, by item id.
func (s *Store) AnnotatorRatings(_ context.Context, annotatorID int64) ([]audit.Rating, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []audit.Rating{}
	for k, r := range s.ratings {
		if k.annotator == annotatorID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ItemID < out[j].ItemID })
	return out, nil
}

// RatingsLong lists every rating of a study's annotators, by item then annotator.
func (s *Store) RatingsLong(_ context.Context, studyID string) ([]audit.RatingRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []audit.RatingRow{}
	for k, r := range s.ratings {
		if s.annotators[k.annotator-1].a.StudyID != studyID {
			continue
		}
		it := s.items[k.item]
		out = append(out, audit.RatingRow{ItemID: it.ID, TaskID: it.TaskID, PlanID: it.PlanID, Variant: it.Variant, AnnotatorID: k.annotator,
			Fidelity: r.Fidelity, Naturalness: r.Naturalness, Leakage: r.Leakage, Note: r.Note, UpdatedAt: r.UpdatedAt})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ItemID != out[j].ItemID {
			return out[i].ItemID < out[j].ItemID
		}
		return out[i].AnnotatorID < out[j].AnnotatorID
	})
	return out, nil
}
