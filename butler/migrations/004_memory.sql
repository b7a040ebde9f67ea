-- Episodic memory: what past sessions did, injected into later system prompts.
CREATE TABLE memory_episodes (
    id          bigserial PRIMARY KEY,
    session_id  uuid REFERENCES sessions (id) ON DELETE SET NULL,
    content     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX memory_episodes_latest_idx ON memory_episodes (created_at DESC);
