-- Crash-safe sessions. A call cut short by the platform (the console crashed or stopped, its
-- database writes failed) is run again by the same participant as a new attempt of the same
-- assignment, so an assignment may now have several sessions: one per attempt, each attempt after
-- the first naming the one it re-runs. console_id names the console process that ran a session, so
-- that a console starting up closes only the sessions of consoles that are gone.
ALTER TABLE sessions DROP CONSTRAINT sessions_assignment_id_key;
ALTER TABLE sessions ADD COLUMN attempt int NOT NULL DEFAULT 1 CHECK (attempt >= 1);
ALTER TABLE sessions ADD COLUMN reruns text REFERENCES sessions;
ALTER TABLE sessions ADD COLUMN console_id text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX sessions_assignment_attempt ON sessions (assignment_id, attempt) WHERE assignment_id IS NOT NULL;
CREATE INDEX sessions_assignment ON sessions (assignment_id);
