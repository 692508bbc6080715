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

	"github.com/voicebench/humanaudit/internal/audit"
)

// argon2id parameters (OWASP's minimum recommendation: 19 MiB, 2 passes, 1 lane).
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
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
func (db *DB) CreateExperimenter(ctx context.Context, name, password string) (audit.Experimenter, error) {
	if strings.TrimSpace(name) == "" {
		return audit.Experimenter{}, audit.Errorf(audit.ErrInvalid, "experimenter name is empty")
	}
	if err := audit.CheckPassword(name, password); err != nil {
		return audit.Experimenter{}, err
	}
	e := audit.Experimenter{Name: name, CreatedAt: db.stamp()}
	err := db.pool.QueryRow(ctx, `INSERT INTO experimenters (name, password_hash, created_at) VALUES ($1, $2, $3) RETURNING id`,
		name, hashPassword(password), e.CreatedAt).Scan(&e.ID)
	return e, translate(err, "create experimenter "+name)
}

// SetExperimenterPassword replaces an experimenter's password.
func (db *DB) SetExperimenterPassword(ctx context.Context, name, password string) error {
	if err := audit.CheckPassword(name, password); err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE experimenters SET password_hash = $2 WHERE name = $1`, name, hashPassword(password))
	if err == nil && tag.RowsAffected() == 0 {
		return audit.Errorf(audit.ErrNotFound, "experimenter %s", name)
	}
	return translate(err, "set password of "+name)
}

// CheckExperimenterPassword returns the experimenter if name and password match; any mismatch,
// unknown names included, is ErrUnauthorized.
func (db *DB) CheckExperimenterPassword(ctx context.Context, name, password string) (audit.Experimenter, error) {
	var e audit.Experimenter
	var phc string
	err := db.pool.QueryRow(ctx, `SELECT id, name, password_hash, created_at FROM experimenters WHERE name = $1`, name).
		Scan(&e.ID, &e.Name, &phc, &e.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		checkPassword(dummyHash(), password)
		return audit.Experimenter{}, audit.Errorf(audit.ErrUnauthorized, "sign in")
	}
	if err != nil {
		return audit.Experimenter{}, translate(err, "sign in")
	}
	if !checkPassword(phc, password) {
		return audit.Experimenter{}, audit.Errorf(audit.ErrUnauthorized, "sign in")
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

// ExperimenterByName returns an experimenter account by name (for operator tools that issue links;
// never for signing in).
func (db *DB) ExperimenterByName(ctx context.Context, name string) (audit.Experimenter, error) {
	var e audit.Experimenter
	err := db.pool.QueryRow(ctx, `SELECT id, name, created_at FROM experimenters WHERE name = $1`, name).Scan(&e.ID, &e.Name, &e.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Experimenter{}, audit.Errorf(audit.ErrNotFound, "experimenter %s", name)
	}
	if err != nil {
		return audit.Experimenter{}, translate(err, "experimenter "+name)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

func tokenDigest(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// IssueSignInLink mints a one-time sign-in link token for an experimenter, usable once within ttl
// (0: DefaultSignInLinkTTL). Only its SHA-256 is stored: the token is shown once.
func (db *DB) IssueSignInLink(ctx context.Context, experimenterID int64, label string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = audit.DefaultSignInLinkTTL
	}
	b := make([]byte, 32)
	rand.Read(b)
	token := "xl_" + base64.RawURLEncoding.EncodeToString(b)
	now := db.stamp()
	_, err := db.pool.Exec(ctx, `INSERT INTO experimenter_tokens (token_sha256, experimenter_id, label, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, tokenDigest(token), experimenterID, label, now, now.Add(ttl))
	if err != nil {
		return "", translate(err, "issue sign-in link")
	}
	return token, nil
}

// ConsumeSignInLink spends a sign-in link and returns its experimenter. It succeeds once: a link
// used before, expired or revoked is ErrExpired (concurrent uses: exactly one wins); an unknown
// one ErrUnauthorized.
func (db *DB) ConsumeSignInLink(ctx context.Context, token string) (audit.Experimenter, error) {
	now := db.stamp()
	var id int64
	err := db.pool.QueryRow(ctx, `UPDATE experimenter_tokens SET consumed_at = $2
		WHERE token_sha256 = $1 AND consumed_at IS NULL AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
		RETURNING experimenter_id`, tokenDigest(token), now).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Experimenter{}, db.refusal(ctx, `SELECT EXISTS (SELECT 1 FROM experimenter_tokens WHERE token_sha256 = $1)`, token,
			"sign-in link used before or expired", "sign-in link")
	}
	if err != nil {
		return audit.Experimenter{}, translate(err, "sign-in link")
	}
	return db.experimenter(ctx, id)
}

// refusal tells a token that exists but can no longer be used (ErrExpired, saying expired) from one
// that never existed (ErrUnauthorized); existsSQL looks the token's digest up.
func (db *DB) refusal(ctx context.Context, existsSQL, token, expired, what string) error {
	var exists bool
	if err := db.pool.QueryRow(ctx, existsSQL, tokenDigest(token)).Scan(&exists); err != nil {
		return translate(err, what)
	}
	if exists {
		return audit.Errorf(audit.ErrExpired, "%s", expired)
	}
	return audit.Errorf(audit.ErrUnauthorized, "%s", what)
}

func (db *DB) experimenter(ctx context.Context, id int64) (audit.Experimenter, error) {
	var e audit.Experimenter
	err := db.pool.QueryRow(ctx, `SELECT id, name, created_at FROM experimenters WHERE id = $1`, id).Scan(&e.ID, &e.Name, &e.CreatedAt)
	e.CreatedAt = e.CreatedAt.UTC()
	return e, translate(err, fmt.Sprintf("experimenter %d", id))
}

// CreateExperimenterSession starts a session for a signed-in experimenter and returns its secret
// (the cookie value, shown once; only its SHA-256 is stored).
func (db *DB) CreateExperimenterSession(ctx context.Context, experimenterID int64, via string, lim audit.SessionLimits) (string, error) {
	lim = lim.WithDefaults()
	b := make([]byte, 32)
	rand.Read(b)
	token := "xs_" + base64.RawURLEncoding.EncodeToString(b)
	now := db.stamp()
	_, err := db.pool.Exec(ctx, `INSERT INTO experimenter_sessions (id_sha256, experimenter_id, via, created_at, last_seen_at, idle_seconds, expires_at)
		VALUES ($1, $2, $3, $4, $4, $5, $6)`, tokenDigest(token), experimenterID, via, now, int(max(lim.Idle/time.Second, 1)), now.Add(lim.Absolute))
	if err != nil {
		return "", translate(err, "create experimenter session")
	}
	return token, nil
}

// ExperimenterBySession returns the session a cookie value opens and records the request (which
// resets the idle timer). An unknown value is ErrUnauthorized; a revoked, idle or expired session
// ErrExpired.
func (db *DB) ExperimenterBySession(ctx context.Context, token string) (audit.ExperimenterSession, error) {
	if !strings.HasPrefix(token, "xs_") || len(token) > 128 {
		return audit.ExperimenterSession{}, audit.Errorf(audit.ErrUnauthorized, "experimenter session")
	}
	now := db.stamp()
	var s audit.ExperimenterSession
	var idle int
	err := db.pool.QueryRow(ctx, `UPDATE experimenter_sessions t SET last_seen_at = $2
		FROM experimenters x
		WHERE t.id_sha256 = $1 AND x.id = t.experimenter_id AND t.revoked_at IS NULL AND t.expires_at > $2
		  AND t.last_seen_at + t.idle_seconds * interval '1 second' > $2
		RETURNING x.id, x.name, x.created_at, t.via, t.created_at, t.expires_at, t.idle_seconds`, tokenDigest(token), now).
		Scan(&s.Experimenter.ID, &s.Experimenter.Name, &s.Experimenter.CreatedAt, &s.Via, &s.CreatedAt, &s.ExpiresAt, &idle)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.ExperimenterSession{}, db.refusal(ctx, `SELECT EXISTS (SELECT 1 FROM experimenter_sessions WHERE id_sha256 = $1)`, token,
			"experimenter session ended", "experimenter session")
	}
	if err != nil {
		return audit.ExperimenterSession{}, translate(err, "experimenter session")
	}
	s.Experimenter.CreatedAt, s.CreatedAt, s.ExpiresAt = s.Experimenter.CreatedAt.UTC(), s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	s.Idle = time.Duration(idle) * time.Second
	return s, nil
}

// RevokeExperimenterSession ends a session at once (logout). Revoking an unknown or ended session
// is not an error: the outcome is the same.
func (db *DB) RevokeExperimenterSession(ctx context.Context, token string) error {
	_, err := db.pool.Exec(ctx, `UPDATE experimenter_sessions SET revoked_at = coalesce(revoked_at, $2) WHERE id_sha256 = $1`,
		tokenDigest(token), db.stamp())
	return translate(err, "revoke experimenter session")
}
