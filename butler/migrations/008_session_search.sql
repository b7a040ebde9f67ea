-- Full-text search over what a session was asked and what it answered. An
-- expression index rather than a stored column: nothing is rewritten, and the
-- text is cut first, so a long output can never make its row unwritable
-- (a tsvector holds at most 1 MB). butler/store/session_search.py repeats this
-- expression word for word, or the planner would not use the index.
CREATE INDEX sessions_search_idx ON sessions USING gin (
    to_tsvector('english', left(prompt, 100000) || ' ' || left(coalesce(output, ''), 100000))
);
-- Filtering by runtime pages by (runtime, created_at, id) as the other filters do.
CREATE INDEX sessions_runtime_page_idx ON sessions (runtime, created_at DESC, id DESC);
