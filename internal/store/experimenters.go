package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/argon2"
)

// Experimenter is a person who runs studies and reviews sessions.
type Experimenter struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// argon2id parameters (OWASP's minimum recommendation: 19 MiB, 2 passes, 1 lane).
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	minPassword    = 10
)

// hashPassword returns an argon2id PHC string.
func hashPassword(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// checkPassword reports whether password matches the PHC string, in time independent of where
// the keys differ.
func checkPassword(phc, password string) bool {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when the name is unknown, so both failures take as long.
var dummyHash = sync.OnceValue(func() string { return hashPassword("no such experimenter, no such password") })

// CreateExperimenter adds an experimenter with a password (at least 10 characters), stored only
// as an argon2id hash. A taken name is ErrConflict.
func (db *DB) CreateExperimenter(ctx context.Context, name, password string) (Experimenter, error) {
	if strings.TrimSpace(name) == "" {
		return Experimenter{}, newError(ErrInvalid, "experimenter name is empty")
	}
	if len([]rune(password)) < minPassword {
		return Experimenter{}, newError(ErrInvalid, "password of %s: want at least %d characters", name, minPassword)
	}
	e := Experimenter{Name: name, CreatedAt: db.stamp()}
	err := db.pool.QueryRow(ctx, `INSERT INTO experimenters (name, password_hash, created_at) VALUES ($1, $2, $3) RETURNING id`,
		name, hashPassword(password), e.CreatedAt).Scan(&e.ID)
	return e, translate(err, "create experimenter "+name)
}

// SetExperimenterPassword replaces an experimenter's password.
func (db *DB) SetExperimenterPassword(ctx context.Context, name, password string) error {
	if len([]rune(password)) < minPassword {
		return newError(ErrInvalid, "password of %s: want at least %d characters", name, minPassword)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE experimenters SET password_hash = $2 WHERE name = $1`, name, hashPassword(password))
	if err == nil && tag.RowsAffected() == 0 {
		return newError(ErrNotFound, "experimenter %s", name)
	}
	return translate(err, "set password of "+name)
}

// CheckExperimenterPassword returns the experimenter if name and password match; any mismatch,
// unknown names included, is ErrUnauthorized.
func (db *DB) CheckExperimenterPassword(ctx context.Context, name, password string) (Experimenter, error) {
	var e Experimenter
	var phc string
	err := db.pool.QueryRow(ctx, `SELECT id, name, password_hash, created_at FROM experimenters WHERE name = $1`, name).
		Scan(&e.ID, &e.Name, &phc, &e.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		checkPassword(dummyHash(), password)
		return Experimenter{}, newError(ErrUnauthorized, "sign in")
	}
	if err != nil {
		return Experimenter{}, translate(err, "sign in")
	}
	if !checkPassword(phc, password) {
		return Experimenter{}, newError(ErrUnauthorized, "sign in")
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

// ExperimenterByName returns an experimenter account by name (for operator tools that issue links;
// never for signing in).
func (db *DB) ExperimenterByName(ctx context.Context, name string) (Experimenter, error) {
	var e Experimenter
	err := db.pool.QueryRow(ctx, `SELECT id, name, created_at FROM experimenters WHERE name = $1`, name).Scan(&e.ID, &e.Name, &e.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Experimenter{}, newError(ErrNotFound, "experimenter %s", name)
	}
	if err != nil {
		return Experimenter{}, translate(err, "experimenter "+name)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

func tokenDigest(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// IssueExperimenterToken mints a bearer token for an experimenter, valid for ttl (0: until
// revoked). Only its SHA-256 is stored: the token is shown once.
func (db *DB) IssueExperimenterToken(ctx context.Context, experimenterID int64, label string, ttl time.Duration) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	token := "ex_" + base64.RawURLEncoding.EncodeToString(b)
	now := db.stamp()
	var expires *time.Time
	if ttl > 0 {
		t := now.Add(ttl)
		expires = &t
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO experimenter_tokens (token_sha256, experimenter_id, label, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, tokenDigest(token), experimenterID, label, now, expires)
	if err != nil {
		return "", translate(err, "issue token")
	}
	return token, nil
}

// ExperimenterByToken returns the experimenter a bearer token belongs to: ErrUnauthorized for an
// unknown token, ErrExpired for an expired or revoked one.
func (db *DB) ExperimenterByToken(ctx context.Context, token string) (Experimenter, error) {
	var e Experimenter
	var expires, revoked *time.Time
	err := db.pool.QueryRow(ctx, `SELECT x.id, x.name, x.created_at, t.expires_at, t.revoked_at
		FROM experimenter_tokens t JOIN experimenters x ON x.id = t.experimenter_id WHERE t.token_sha256 = $1`, tokenDigest(token)).
		Scan(&e.ID, &e.Name, &e.CreatedAt, &expires, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return Experimenter{}, newError(ErrUnauthorized, "experimenter token")
	}
	if err != nil {
		return Experimenter{}, translate(err, "experimenter token")
	}
	if revoked != nil || expires != nil && !db.now().Before(*expires) {
		return Experimenter{}, newError(ErrExpired, "experimenter token")
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

// RevokeExperimenterToken invalidates a bearer token at once.
func (db *DB) RevokeExperimenterToken(ctx context.Context, token string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE experimenter_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE token_sha256 = $1`,
		tokenDigest(token), db.stamp())
	if err == nil && tag.RowsAffected() == 0 {
		return newError(ErrNotFound, "experimenter token")
	}
	return translate(err, "revoke token")
}
