package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

// CreateStudy stores a new study; an existing ID is ErrConflict.
func (db *DB) CreateStudy(ctx context.Context, s audit.Study) (audit.Study, error) {
	s, err := s.Checked()
	if err != nil {
		return audit.Study{}, err
	}
	s.CreatedAt = db.stamp()
	_, err = db.pool.Exec(ctx, `INSERT INTO studies (id, name, seed, config, created_at) VALUES ($1, $2, $3, $4, $5)`,
		s.ID, s.Name, s.Seed, []byte(s.Config), s.CreatedAt)
	if err != nil {
		return audit.Study{}, translate(err, "create study "+s.ID)
	}
	return s, nil
}

// Study returns the study with id.
func (db *DB) Study(ctx context.Context, id string) (audit.Study, error) {
	var s audit.Study
	err := db.pool.QueryRow(ctx, `SELECT id, name, seed, config, created_at FROM studies WHERE id = $1`, id).
		Scan(&s.ID, &s.Name, &s.Seed, &s.Config, &s.CreatedAt)
	s.CreatedAt = s.CreatedAt.UTC()
	return s, translate(err, "study "+id)
}

// Studies lists every study, oldest first.
func (db *DB) Studies(ctx context.Context) ([]audit.Study, error) {
	rows, _ := db.pool.Query(ctx, `SELECT id, name, seed, config, created_at FROM studies ORDER BY created_at, id`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Study, error) {
		var s audit.Study
		err := r.Scan(&s.ID, &s.Name, &s.Seed, &s.Config, &s.CreatedAt)
		s.CreatedAt = s.CreatedAt.UTC()
		return s, err
	})
	return out, translate(err, "list studies")
}

// SetStudyConfig replaces a study's config.
func (db *DB) SetStudyConfig(ctx context.Context, id string, config json.RawMessage) error {
	cfg, err := audit.ConfigObject(config, "study config")
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE studies SET config = $2 WHERE id = $1`, id, []byte(cfg))
	if err == nil && tag.RowsAffected() == 0 {
		return audit.Errorf(audit.ErrNotFound, "study %s", id)
	}
	return translate(err, "set config of study "+id)
}

// UpsertSystem stores s, or updates the family, config and (when given) alias of an existing
// system with the same label. An empty alias gets the next free "Agent A", "Agent B", ….
func (db *DB) UpsertSystem(ctx context.Context, s audit.System) (audit.System, error) {
	s, err := s.Checked()
	if err != nil {
		return audit.System{}, err
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		// Serialise alias assignment so two systems never pick the same next letter.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey+1); err != nil {
			return err
		}
		var existing string
		err := tx.QueryRow(ctx, `SELECT alias FROM systems WHERE label = $1`, s.Label).Scan(&existing)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if s.Alias == "" {
			s.Alias = existing
		}
		if s.Alias == "" {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM systems`).Scan(&n); err != nil {
				return err
			}
			for {
				s.Alias = "Agent " + letters(n)
				var taken bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM systems WHERE alias = $1)`, s.Alias).Scan(&taken); err != nil {
					return err
				}
				if !taken {
					break
				}
				n++
			}
		}
		return tx.QueryRow(ctx, `
			INSERT INTO systems (label, alias, family, config, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (label) DO UPDATE SET alias = EXCLUDED.alias, family = EXCLUDED.family, config = EXCLUDED.config
			RETURNING created_at, config`, s.Label, s.Alias, s.Family, []byte(s.Config), db.stamp()).Scan(&s.CreatedAt, &s.Config)
	})
	s.CreatedAt = s.CreatedAt.UTC()
	return s, translate(err, "store system "+s.Label)
}

// letters numbers aliases like spreadsheet columns: 0 → A, 25 → Z, 26 → AA.
func letters(n int) string {
	s := ""
	for n++; n > 0; n = (n - 1) / 26 {
		s = string(rune('A'+(n-1)%26)) + s
	}
	return s
}

const systemCols = `label, alias, family, config, created_at`

func scanSystem(r pgx.Row) (audit.System, error) {
	var s audit.System
	err := r.Scan(&s.Label, &s.Alias, &s.Family, &s.Config, &s.CreatedAt)
	s.CreatedAt = s.CreatedAt.UTC()
	return s, err
}

// System returns the system with label.
func (db *DB) System(ctx context.Context, label string) (audit.System, error) {
	s, err := scanSystem(db.pool.QueryRow(ctx, `SELECT `+systemCols+` FROM systems WHERE label = $1`, label))
	return s, translate(err, "system "+label)
}

// SystemByAlias returns the system shown to participants as alias.
func (db *DB) SystemByAlias(ctx context.Context, alias string) (audit.System, error) {
	s, err := scanSystem(db.pool.QueryRow(ctx, `SELECT `+systemCols+` FROM systems WHERE alias = $1`, alias))
	return s, translate(err, "system "+alias)
}

// Systems lists every system by alias.
func (db *DB) Systems(ctx context.Context) ([]audit.System, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+systemCols+` FROM systems ORDER BY length(alias), alias`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.System, error) { return scanSystem(r) })
	return out, translate(err, "list systems")
}

// PutTask stores version of task id with the given spec (the task file's JSON). Storing the same
// bytes again is a no-op; other bytes under a stored (id, version) are ErrConflict, because stored
// sessions must stay gradable against the spec they ran: change the version instead.
func (db *DB) PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error) {
	t, err := audit.NewTaskVersion(id, version, spec)
	if err != nil {
		return audit.TaskVersion{}, err
	}
	t.LoadedAt = db.stamp()
	tag, err := db.pool.Exec(ctx, `INSERT INTO tasks (id, version, sha256, spec, loaded_at) VALUES ($1, $2, $3, $4::json, $5)
		ON CONFLICT (id, version) DO NOTHING`, t.ID, t.Version, t.SHA256, string(spec), t.LoadedAt)
	if err != nil {
		return audit.TaskVersion{}, translate(err, fmt.Sprintf("store task %s version %d", id, version))
	}
	if tag.RowsAffected() == 1 {
		return t, nil
	}
	stored, err := db.Task(ctx, id, version)
	if err != nil {
		return audit.TaskVersion{}, err
	}
	if stored.SHA256 != t.SHA256 {
		return audit.TaskVersion{}, audit.Errorf(audit.ErrConflict, "task %s version %d is stored with other content (sha256 %.12s…, file has %.12s…): bump the task's version", id, version, stored.SHA256, t.SHA256)
	}
	return stored, nil
}

func scanTask(r pgx.Row) (audit.TaskVersion, error) {
	var t audit.TaskVersion
	var spec string
	err := r.Scan(&t.ID, &t.Version, &t.SHA256, &spec, &t.LoadedAt)
	t.Spec, t.LoadedAt = json.RawMessage(spec), t.LoadedAt.UTC()
	return t, err
}

const taskCols = `id, version, sha256, spec::text, loaded_at`

// Task returns one version of a task.
func (db *DB) Task(ctx context.Context, id string, version int) (audit.TaskVersion, error) {
	t, err := scanTask(db.pool.QueryRow(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = $1 AND version = $2`, id, version))
	return t, translate(err, fmt.Sprintf("task %s version %d", id, version))
}

// LatestTask returns the highest stored version of a task.
func (db *DB) LatestTask(ctx context.Context, id string) (audit.TaskVersion, error) {
	t, err := scanTask(db.pool.QueryRow(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = $1 ORDER BY version DESC LIMIT 1`, id))
	return t, translate(err, "task "+id)
}

// Tasks lists the latest version of every task by id.
func (db *DB) Tasks(ctx context.Context) ([]audit.TaskVersion, error) {
	rows, _ := db.pool.Query(ctx, `SELECT DISTINCT ON (id) `+taskCols+` FROM tasks ORDER BY id, version DESC`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.TaskVersion, error) { return scanTask(r) })
	return out, translate(err, "list tasks")
}
