-- Per-day figures of the sessions table for the dashboard's charts, kept up to date
-- on read: a chart reads at most 90 x (statuses x runtimes) rows instead of
-- aggregating a million sessions. A day is recomputed whole when any of its
-- sessions changed since the last refresh (found by sessions_updated_idx).
CREATE TABLE session_days (
    day            date NOT NULL,
    status         text NOT NULL,
    runtime        text NOT NULL,
    sessions       bigint NOT NULL,
    input_tokens   bigint NOT NULL,
    output_tokens  bigint NOT NULL,
    cost_usd       numeric(16, 6) NOT NULL,
    PRIMARY KEY (day, status, runtime)
);
-- Durations of the sessions that ended, per day (percentiles do not add up across groups).
CREATE TABLE session_day_durations (
    day     date PRIMARY KEY,
    ended   bigint NOT NULL,
    p50_ms  double precision,
    p95_ms  double precision
);
-- How far the figures are known to be up to date; one row.
CREATE TABLE session_days_refreshed (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    through  timestamptz  -- NULL: never refreshed
);
INSERT INTO session_days_refreshed (through) VALUES (NULL);
