-- Listening conditions (issue 19): the condition a planned cell is run under and the condition a
-- session ran under ('' is quiet, as before conditions existed; e.g. 'phone_line+babble@5').
ALTER TABLE assignments ADD COLUMN condition text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN condition text NOT NULL DEFAULT '';
CREATE INDEX sessions_condition ON sessions (system_label, condition) WHERE mode = 'synthetic';

-- A cell returned to the pool (an exclusion, a released participant) keeps its condition: the
-- row that re-runs it copies the condition of the row it replaces, whichever code inserts it.
CREATE FUNCTION assignments_keep_condition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.replaces IS NOT NULL AND NEW.condition = '' THEN
        SELECT a.condition INTO NEW.condition FROM assignments a WHERE a.id = NEW.replaces;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER assignments_keep_condition BEFORE INSERT ON assignments
    FOR EACH ROW EXECUTE FUNCTION assignments_keep_condition();
