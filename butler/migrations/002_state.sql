-- The butler's key-value state, read and written by its runtimes through MCP tools.
CREATE TABLE state (
    key         text PRIMARY KEY,
    value       jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
