-- A call the participant hung up before the study's minimum length is excluded as too_short (and
-- its participant calls again), so the exclusion reasons gain it.
ALTER TABLE exclusions DROP CONSTRAINT exclusions_reason_check;
ALTER TABLE exclusions ADD CONSTRAINT exclusions_reason_check
    CHECK (reason IN ('caller_broke_script', 'platform_lost', 'grader_error', 'other', 'too_short'));
