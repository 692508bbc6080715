-- Security hardening: link tokens at rest are SHA-256 digests, experimenter sign-in links are
-- one-time, experimenters hold separate server-side sessions, and open enrollments lapse.

-- Participant and annotator link tokens: only the SHA-256 of the token is kept. Existing tokens
-- are migrated (the digest of the stored text), so links already handed out keep working.
ALTER TABLE participants ADD COLUMN token_sha256 bytea;
UPDATE participants SET token_sha256 = sha256(convert_to(token, 'UTF8'));
ALTER TABLE participants ALTER COLUMN token_sha256 SET NOT NULL;
ALTER TABLE participants ADD CONSTRAINT participants_token_sha256_key UNIQUE (token_sha256);
ALTER TABLE participants ADD CONSTRAINT participants_token_sha256_len CHECK (length(token_sha256) = 32);
ALTER TABLE participants DROP COLUMN token;

ALTER TABLE annotators ADD COLUMN token_sha256 bytea;
UPDATE annotators SET token_sha256 = sha256(convert_to(token, 'UTF8'));
ALTER TABLE annotators ALTER COLUMN token_sha256 SET NOT NULL;
ALTER TABLE annotators ADD CONSTRAINT annotators_token_sha256_key UNIQUE (token_sha256);
ALTER TABLE annotators ADD CONSTRAINT annotators_token_sha256_len CHECK (length(token_sha256) = 32);
ALTER TABLE annotators DROP COLUMN token;

-- Recruiting ids are bounded (the web app also checks their pattern) and an open enrollment that
-- is not followed by consent lapses at consent_deadline, returning its plan slot to the pool.
ALTER TABLE participants ADD CONSTRAINT participants_external_len
    CHECK (length(prolific_pid) <= 64 AND length(prolific_study_id) <= 64 AND length(prolific_session_id) <= 64) NOT VALID;
ALTER TABLE participants ADD COLUMN consent_deadline timestamptz;
CREATE INDEX participants_pending ON participants (study_id, consent_deadline) WHERE consent_at IS NULL AND consent_deadline IS NOT NULL;

-- experimenter_tokens are now one-time sign-in links: consumed at first use. The tokens issued
-- before were reusable 12–24 hour credentials (and browser cookies): they are revoked, so
-- experimenters sign in again once.
ALTER TABLE experimenter_tokens ADD COLUMN consumed_at timestamptz;
UPDATE experimenter_tokens SET revoked_at = coalesce(revoked_at, now());

-- A signed-in experimenter's session: a random cookie value of which only the SHA-256 is kept,
-- ending at an absolute expiry, after idle_seconds without a request, or at logout (revoked_at).
CREATE TABLE experimenter_sessions (
    id_sha256       bytea PRIMARY KEY CHECK (length(id_sha256) = 32),
    experimenter_id bigint NOT NULL REFERENCES experimenters,
    via             text NOT NULL CHECK (via IN ('password', 'link')),
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    idle_seconds    int NOT NULL CHECK (idle_seconds > 0),
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz
);
CREATE INDEX experimenter_sessions_experimenter ON experimenter_sessions (experimenter_id);
