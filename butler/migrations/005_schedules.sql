-- When each of the butler's schedules last fired, so a restart neither fires a
-- slot twice nor forgets one. configured_at moves when a schedule's cron or time
-- zone changes, so a changed schedule does not "catch up" slots it never had.
CREATE TABLE schedules (
    name            text PRIMARY KEY,
    cron            text NOT NULL,
    timezone        text NOT NULL,
    configured_at   timestamptz NOT NULL,
    last_fired_at   timestamptz,
    last_fired_via  text CHECK (last_fired_via IN ('clock', 'tick', 'manual'))
);
