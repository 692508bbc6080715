-- The console's schema. Byte-exact documents (event bodies, task specs, grades) are `json`, which
-- keeps the text as written, so a trace exported from the database re-encodes to the same bytes
-- the session wrote; documents we only query are `jsonb`.

CREATE TABLE studies (
    id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    name       text NOT NULL,
    seed       bigint NOT NULL,
    config     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);

-- Evaluated systems. The alias is what participants and annotators may see ("Agent A"). The
-- config holds non-secret settings only: keys are read from secrets.txt by label, never stored.
CREATE TABLE systems (
    label      text PRIMARY KEY CHECK (label <> ''),
    alias      text NOT NULL UNIQUE CHECK (alias <> ''),
    family     text NOT NULL DEFAULT '',
    config     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);

-- Task specs as loaded from tasks/. A version is immutable: the same (id, version) with other
-- bytes is refused, so a stored session is always graded against the spec it ran.
CREATE TABLE tasks (
    id        text NOT NULL CHECK (id <> ''),
    version   int NOT NULL CHECK (version >= 0),
    sha256    text NOT NULL,
    spec      json NOT NULL,
    loaded_at timestamptz NOT NULL,
    PRIMARY KEY (id, version)
);

CREATE TABLE participants (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    study_id            text NOT NULL REFERENCES studies,
    token               text NOT NULL UNIQUE CHECK (length(token) >= 22),
    prolific_pid        text,
    prolific_study_id   text,
    prolific_session_id text,
    consent_at          timestamptz,
    consent_sha256      text,
    mic_check           jsonb,
    mic_checked_at      timestamptz,
    expires_at          timestamptz,
    created_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX participants_prolific ON participants (study_id, prolific_pid) WHERE prolific_pid IS NOT NULL;
CREATE INDEX participants_study ON participants (study_id, id);

-- A plan slot is one planned participant's sequence of sessions ("P07"); a real participant is
-- bound to a free slot when they first ask for work.
CREATE TABLE slots (
    study_id       text NOT NULL REFERENCES studies,
    label          text NOT NULL CHECK (label <> ''),
    ord            int NOT NULL,
    participant_id bigint UNIQUE REFERENCES participants,
    bound_at       timestamptz,
    PRIMARY KEY (study_id, label)
);
CREATE INDEX slots_free ON slots (study_id, ord) WHERE participant_id IS NULL;

-- One row per planned session (a cell: task × system × repeat). Rows of a slot carry slot and
-- position; cells returned to the pool after an exclusion carry neither until handed out.
CREATE TABLE assignments (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    study_id       text NOT NULL REFERENCES studies,
    slot           text,
    participant_id bigint REFERENCES participants,
    position       int CHECK (position >= 1),
    task_id        text NOT NULL CHECK (task_id <> ''),
    system_label   text NOT NULL REFERENCES systems,
    repeat         smallint NOT NULL CHECK (repeat IN (1, 2)),
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'excluded')),
    session_id     text,
    replaces       bigint REFERENCES assignments,
    created_at     timestamptz NOT NULL,
    claimed_at     timestamptz,
    finished_at    timestamptz,
    FOREIGN KEY (study_id, slot) REFERENCES slots (study_id, label),
    UNIQUE (study_id, slot, position)
);
-- No participant meets the same task twice (excluded runs included: they did meet it).
CREATE UNIQUE INDEX assignments_participant_task ON assignments (participant_id, task_id) WHERE participant_id IS NOT NULL;
CREATE INDEX assignments_participant ON assignments (participant_id, position);
CREATE INDEX assignments_pool ON assignments (study_id, repeat, id) WHERE status = 'pending' AND participant_id IS NULL AND slot IS NULL;
CREATE INDEX assignments_cell ON assignments (study_id, task_id, system_label, repeat);

CREATE TABLE sessions (
    id             text PRIMARY KEY CHECK (id <> ''),
    study_id       text REFERENCES studies,
    assignment_id  bigint UNIQUE REFERENCES assignments,
    participant_id bigint REFERENCES participants,
    task_id        text NOT NULL,
    task_version   int NOT NULL,
    system_label   text NOT NULL REFERENCES systems,
    mode           text NOT NULL CHECK (mode IN ('human', 'synthetic')),
    seed           bigint NOT NULL DEFAULT 0,
    status         text NOT NULL DEFAULT 'created' CHECK (status IN ('created', 'running', 'ended')),
    created_at     timestamptz NOT NULL,
    started_at     timestamptz,
    ended_at       timestamptz,
    end_reason     text NOT NULL DEFAULT '',
    FOREIGN KEY (task_id, task_version) REFERENCES tasks (id, version),
    CHECK (mode = 'synthetic' OR participant_id IS NOT NULL)
);
CREATE INDEX sessions_study ON sessions (study_id, created_at);
CREATE INDEX sessions_participant ON sessions (participant_id);
CREATE INDEX sessions_live ON sessions (created_at) WHERE status <> 'ended';
ALTER TABLE assignments ADD FOREIGN KEY (session_id) REFERENCES sessions;

-- The append-only event log: body is the full trace.Event exactly as the session encoded it.
CREATE TABLE events (
    session_id text NOT NULL REFERENCES sessions,
    seq        bigint NOT NULL CHECK (seq >= 1),
    t_ms       bigint NOT NULL,
    wall       timestamptz NOT NULL,
    type       text NOT NULL,
    body       json NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

-- Live views LISTEN on audit_events; the payload is "session_id seq" of the newest event per
-- session in each insert statement, delivered when the transaction commits.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT session_id, max(seq) AS seq FROM new_events GROUP BY session_id LOOP
        PERFORM pg_notify('audit_events', r.session_id || ' ' || r.seq);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();

CREATE TABLE recordings (
    session_id  text NOT NULL REFERENCES sessions,
    kind        text NOT NULL CHECK (kind <> ''),
    path        text NOT NULL CHECK (path <> ''),
    sample_rate int NOT NULL CHECK (sample_rate > 0),
    channels    smallint NOT NULL CHECK (channels > 0),
    duration_ms bigint NOT NULL CHECK (duration_ms >= 0),
    bytes       bigint NOT NULL CHECK (bytes >= 0),
    sha256      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (session_id, kind)
);

-- One grade per session and grader version; the headline columns repeat the grade document's
-- gates (Workflow Success, Target State, Process Validity, Action Completion, Artifact Validity),
-- Artifact Field Accuracy and time-to-resolution for queries.
CREATE TABLE scores (
    session_id     text NOT NULL REFERENCES sessions,
    grader_version text NOT NULL CHECK (grader_version <> ''),
    grade          json NOT NULL,
    ws             boolean NOT NULL,
    ts             boolean NOT NULL,
    pv             boolean NOT NULL,
    ac             boolean NOT NULL,
    av             boolean NOT NULL,
    afa            double precision,
    ttr_ms         bigint,
    graded_at      timestamptz NOT NULL,
    PRIMARY KEY (session_id, grader_version)
);

CREATE TABLE exclusions (
    session_id  text PRIMARY KEY REFERENCES sessions,
    reason      text NOT NULL CHECK (reason IN ('caller_broke_script', 'platform_lost', 'grader_error', 'other')),
    note        text NOT NULL DEFAULT '',
    excluded_by text NOT NULL,
    excluded_at timestamptz NOT NULL
);

CREATE TABLE annotators (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    study_id      text NOT NULL REFERENCES studies,
    token         text NOT NULL UNIQUE CHECK (length(token) >= 22),
    seed_position int NOT NULL CHECK (seed_position >= 0),
    created_at    timestamptz NOT NULL,
    UNIQUE (study_id, seed_position)
);

-- The frozen caller utterances annotators rate. The payload holds what an annotator may see.
CREATE TABLE rating_items (
    id         text PRIMARY KEY CHECK (id <> ''),
    task_id    text NOT NULL,
    plan_id    text NOT NULL,
    variant    text NOT NULL DEFAULT '',
    payload    jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);

CREATE TABLE ratings (
    annotator_id bigint NOT NULL REFERENCES annotators,
    item_id      text NOT NULL REFERENCES rating_items,
    fidelity     smallint NOT NULL CHECK (fidelity BETWEEN 1 AND 5),
    naturalness  smallint NOT NULL CHECK (naturalness BETWEEN 1 AND 5),
    leakage      boolean NOT NULL,
    note         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (annotator_id, item_id)
);

-- Experimenters sign in with a password (argon2id, PHC string) or a bearer token, of which only
-- the SHA-256 is stored.
CREATE TABLE experimenters (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text NOT NULL UNIQUE CHECK (name <> ''),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL
);

CREATE TABLE experimenter_tokens (
    token_sha256    bytea PRIMARY KEY,
    experimenter_id bigint NOT NULL REFERENCES experimenters,
    label           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    revoked_at      timestamptz
);
