-- A builder whose runtime ended without an exit record is "ended": not a stop anyone
-- asked for ("cancelled"), and not known to have failed.
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_status_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_status_check
    CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled', 'ended'));
