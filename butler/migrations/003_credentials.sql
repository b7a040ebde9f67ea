-- Credentials handed to runtimes; looked up before the environment.
CREATE TABLE credentials (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
