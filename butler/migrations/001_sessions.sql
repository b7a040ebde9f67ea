-- Every runtime session the butler ran: what it was asked, what it did, what it cost.
CREATE TABLE sessions (
    id                  uuid PRIMARY KEY,
    prompt              text NOT NULL,
    trigger_source      text NOT NULL,
    runtime             text NOT NULL,
    model               text,
    status              text NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    success             boolean,
    output              text,
    error               text,
    tool_calls          jsonb NOT NULL DEFAULT '[]'::jsonb,
    input_tokens        bigint,
    output_tokens       bigint,
    cache_read_tokens   bigint,
    cache_write_tokens  bigint,
    cost_usd            numeric(12, 6),
    duration_ms         bigint,
    trace_id            text,
    runtime_session_id  text,
    type                text NOT NULL DEFAULT 'trigger',
    parent_session_id   uuid REFERENCES sessions (id) ON DELETE SET NULL,
    metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    completed_at        timestamptz
);

CREATE INDEX sessions_latest_idx ON sessions (created_at DESC);
CREATE INDEX sessions_status_idx ON sessions (status, created_at DESC);
CREATE INDEX sessions_trigger_source_idx ON sessions (trigger_source, created_at DESC);
