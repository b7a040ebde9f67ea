-- Every message the butler sent its person, one row per channel, with every attempt.
-- A message is one notify call or one schedule's answer; it may go to several channels.
CREATE TABLE deliveries (
    id            uuid PRIMARY KEY,
    message       uuid NOT NULL,
    session_id    uuid REFERENCES sessions (id) ON DELETE CASCADE,
    source        text NOT NULL,
    channel       text NOT NULL,
    priority      text NOT NULL CHECK (priority IN ('high', 'normal', 'low')),
    kind          text NOT NULL DEFAULT 'info' CHECK (kind IN ('info', 'failure')),
    title         text NOT NULL,
    body          text NOT NULL,
    attachment    text,
    -- held: waits for quiet hours to end; pending: waits for its next attempt;
    -- sending: an attempt is under way (a restart sends it again).
    status        text NOT NULL
                  CHECK (status IN ('held', 'pending', 'sending', 'delivered', 'failed')),
    -- [{"at": ..., "delivered": true|false, "error": ...}, ...], oldest first
    attempts      jsonb NOT NULL DEFAULT '[]'::jsonb,
    error         text,
    next_at       timestamptz,
    created_at    timestamptz NOT NULL,
    delivered_at  timestamptz
);

CREATE INDEX deliveries_session_idx ON deliveries (session_id, created_at);
CREATE INDEX deliveries_recent_idx ON deliveries (created_at DESC);
CREATE INDEX deliveries_open_idx ON deliveries (next_at) WHERE status IN ('held', 'pending', 'sending');

-- A message's attachment, kept until every channel of the message is done with it.
CREATE TABLE delivery_attachments (
    message  uuid PRIMARY KEY,
    name     text NOT NULL,
    content  bytea NOT NULL
);
