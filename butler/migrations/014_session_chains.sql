-- A session started by a session belongs to its starter's chain: root_id is the session
-- no session started (NULL on that root itself), chain_depth its distance from the root.
-- [butler.runtime] max_chain_depth and max_chain_sessions bound both.
ALTER TABLE sessions ADD COLUMN root_id uuid;
ALTER TABLE sessions ADD COLUMN chain_depth integer NOT NULL DEFAULT 0;

CREATE INDEX sessions_root_idx ON sessions (root_id) WHERE root_id IS NOT NULL;
