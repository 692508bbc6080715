package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

// CreateAnnotator adds an annotator to a study with a fresh unguessable token at the next seed
// position.
func (db *DB) CreateAnnotator(ctx context.Context, studyID string) (audit.Annotator, error) {
	a := audit.Annotator{StudyID: studyID, Token: newToken(), CreatedAt: db.stamp()}
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM studies WHERE id = $1 FOR UPDATE`, studyID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO annotators (study_id, token_sha256, seed_position, created_at)
			SELECT $1, $2, coalesce(max(seed_position) + 1, 0), $3 FROM annotators WHERE study_id = $1
			RETURNING id, seed_position`, studyID, tokenDigest(a.Token), a.CreatedAt).Scan(&a.ID, &a.SeedPosition)
	})
	return a, translate(err, "create annotator in study "+studyID)
}

const annotatorCols = `id, study_id, seed_position, created_at`

func scanAnnotator(r pgx.Row) (audit.Annotator, error) {
	var a audit.Annotator
	err := r.Scan(&a.ID, &a.StudyID, &a.SeedPosition, &a.CreatedAt)
	a.CreatedAt = a.CreatedAt.UTC()
	return a, err
}

// AnnotatorByToken returns the annotator whose link token is exactly token (else ErrNotFound).
func (db *DB) AnnotatorByToken(ctx context.Context, token string) (audit.Annotator, error) {
	if !plausibleToken(token) {
		return audit.Annotator{}, audit.Errorf(audit.ErrNotFound, "annotator token")
	}
	a, err := scanAnnotator(db.pool.QueryRow(ctx, `SELECT `+annotatorCols+` FROM annotators WHERE token_sha256 = $1`, tokenDigest(token)))
	if err == nil {
		a.Token = token // the caller's own secret, not read from the database
	}
	return a, translate(err, "annotator token")
}

// Annotators lists a study's annotators by seed position.
func (db *DB) Annotators(ctx context.Context, studyID string) ([]audit.Annotator, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+annotatorCols+` FROM annotators WHERE study_id = $1 ORDER BY seed_position`, studyID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Annotator, error) { return scanAnnotator(r) })
	return out, translate(err, "annotators of study "+studyID)
}

// PutRatingItems stores the rating set, replacing items with the same id.
func (db *DB) PutRatingItems(ctx context.Context, items []audit.RatingItem) error {
	now := db.stamp()
	err := db.tx(ctx, func(tx pgx.Tx) error {
		for _, it := range items {
			it, err := it.Checked()
			if err != nil {
				return err
			}
			payload := it.Payload
			// An item annotators have rated is frozen: its content may not change under their
			// ratings (a changed utterance is a new item with a new id).
			tag, err := tx.Exec(ctx, `INSERT INTO rating_items (id, task_id, plan_id, variant, payload, created_at)
				VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (id) DO UPDATE SET task_id = EXCLUDED.task_id, plan_id = EXCLUDED.plan_id,
				  variant = EXCLUDED.variant, payload = EXCLUDED.payload
				WHERE (rating_items.task_id, rating_items.plan_id, rating_items.variant, rating_items.payload) =
				      (EXCLUDED.task_id, EXCLUDED.plan_id, EXCLUDED.variant, EXCLUDED.payload)
				   OR NOT EXISTS (SELECT 1 FROM ratings r WHERE r.item_id = rating_items.id)`,
				it.ID, it.TaskID, it.PlanID, it.Variant, []byte(payload), now)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return audit.Errorf(audit.ErrConflict, "rating item %s has ratings and its content differs: a rated item cannot change; give the changed item a new id", it.ID)
			}
		}
		return nil
	})
	return translate(err, "store rating items")
}

const itemCols = `id, task_id, plan_id, variant, payload, created_at`

func scanItem(r pgx.Row) (audit.RatingItem, error) {
	var it audit.RatingItem
	err := r.Scan(&it.ID, &it.TaskID, &it.PlanID, &it.Variant, &it.Payload, &it.CreatedAt)
	it.CreatedAt = it.CreatedAt.UTC()
	return it, err
}

// RatingItem returns one item.
func (db *DB) RatingItem(ctx context.Context, id string) (audit.RatingItem, error) {
	it, err := scanItem(db.pool.QueryRow(ctx, `SELECT `+itemCols+` FROM rating_items WHERE id = $1`, id))
	return it, translate(err, "rating item "+id)
}

// RatingItems lists every item by id (the rating app orders them per annotator).
func (db *DB) RatingItems(ctx context.Context) ([]audit.RatingItem, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+itemCols+` FROM rating_items ORDER BY id`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.RatingItem, error) { return scanItem(r) })
	return out, translate(err, "list rating items")
}

// SaveRating stores an annotator's rating of an item, replacing their earlier rating of it (an
// annotator may go back and edit); CreatedAt keeps the first time.
func (db *DB) SaveRating(ctx context.Context, r audit.Rating) (audit.Rating, error) {
	if err := r.Check(); err != nil {
		return audit.Rating{}, err
	}
	now := db.stamp()
	err := db.pool.QueryRow(ctx, `INSERT INTO ratings (annotator_id, item_id, fidelity, naturalness, leakage, note, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
		ON CONFLICT (annotator_id, item_id) DO UPDATE SET fidelity = EXCLUDED.fidelity, naturalness = EXCLUDED.naturalness,
		  leakage = EXCLUDED.leakage, note = EXCLUDED.note, updated_at = EXCLUDED.updated_at
		RETURNING created_at, updated_at`,
		r.AnnotatorID, r.ItemID, r.Fidelity, r.Naturalness, r.Leakage, r.Note, now).Scan(&r.CreatedAt, &r.UpdatedAt)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, translate(err, fmt.Sprintf("save rating of item %s", r.ItemID))
}

// AnnotatorRatings returns only this annotator's ratings, by item id: what the rating app shows
// them to resume or edit. No call returns another annotator's ratings to an annotator.
func (db *DB) AnnotatorRatings(ctx context.Context, annotatorID int64) ([]audit.Rating, error) {
	rows, _ := db.pool.Query(ctx, `SELECT annotator_id, item_id, fidelity, naturalness, leakage, note, created_at, updated_at
		FROM ratings WHERE annotator_id = $1 ORDER BY item_id`, annotatorID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.Rating, error) {
		var r audit.Rating
		var f, n int16
		err := row.Scan(&r.AnnotatorID, &r.ItemID, &f, &n, &r.Leakage, &r.Note, &r.CreatedAt, &r.UpdatedAt)
		r.Fidelity, r.Naturalness, r.CreatedAt, r.UpdatedAt = int(f), int(n), r.CreatedAt.UTC(), r.UpdatedAt.UTC()
		return r, err
	})
	return out, translate(err, fmt.Sprintf("ratings of annotator %d", annotatorID))
}

// RatingsLong lists every rating of a study's annotators, by item then annotator.
func (db *DB) RatingsLong(ctx context.Context, studyID string) ([]audit.RatingRow, error) {
	rows, _ := db.pool.Query(ctx, `SELECT i.id, i.task_id, i.plan_id, i.variant, r.annotator_id, r.fidelity, r.naturalness,
		r.leakage, r.note, r.updated_at
		FROM ratings r JOIN annotators a ON a.id = r.annotator_id JOIN rating_items i ON i.id = r.item_id
		WHERE a.study_id = $1 ORDER BY i.id, r.annotator_id`, studyID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.RatingRow, error) {
		var r audit.RatingRow
		var f, n int16
		err := row.Scan(&r.ItemID, &r.TaskID, &r.PlanID, &r.Variant, &r.AnnotatorID, &f, &n, &r.Leakage, &r.Note, &r.UpdatedAt)
		r.Fidelity, r.Naturalness, r.UpdatedAt = int(f), int(n), r.UpdatedAt.UTC()
		return r, err
	})
	return out, translate(err, "ratings of study "+studyID)
}
