-- Listings read the newest sessions first and page by (created_at, id): one index
-- per listing query, so a page costs the same at a million rows as at ten.
CREATE INDEX sessions_page_idx ON sessions (created_at DESC, id DESC);
DROP INDEX sessions_latest_idx;
CREATE INDEX sessions_status_page_idx ON sessions (status, created_at DESC, id DESC);
DROP INDEX sessions_status_idx;
CREATE INDEX sessions_trigger_source_page_idx
    ON sessions (trigger_source, created_at DESC, id DESC);
DROP INDEX sessions_trigger_source_idx;
-- Builders are a few rows among all sessions: found by their type, not by a scan.
CREATE INDEX sessions_type_page_idx ON sessions (type, created_at DESC, id DESC);

-- When a row last changed, so a live view fetches only what changed since it looked.
-- A constant default: adding the column rewrites no existing row.
ALTER TABLE sessions ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX sessions_updated_idx ON sessions (updated_at);

CREATE FUNCTION sessions_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END $$;

CREATE TRIGGER sessions_touch BEFORE UPDATE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_touch();
