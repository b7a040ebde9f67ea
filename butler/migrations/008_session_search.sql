-- Full-text search over what a session was asked and what it answered, kept in a
-- stored column: a search that walks the newest sessions first tests each row's
-- ready words instead of parsing its text again (a million rows' outputs). The
-- text is cut first, so a long output can never make its row unwritable (a
-- tsvector holds at most 1 MB). Adding the column rewrites the table once.
ALTER TABLE sessions ADD COLUMN search tsvector GENERATED ALWAYS AS (
    to_tsvector('english', left(prompt, 100000) || ' ' || left(coalesce(output, ''), 100000))
) STORED;
CREATE INDEX sessions_search_idx ON sessions USING gin (search);
-- Filtering by runtime pages by (runtime, created_at, id) as the other filters do.
CREATE INDEX sessions_runtime_page_idx ON sessions (runtime, created_at DESC, id DESC);
