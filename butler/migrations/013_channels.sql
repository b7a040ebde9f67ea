-- Chat channels (docs/channels.md): who may talk to the butler, where each channel
-- left off reading, and every conversation and message in and out.

-- The people a channel answers: paired with a one-time code, nobody else.
CREATE TABLE channel_senders (
    channel       text NOT NULL,
    sender        text NOT NULL,
    display_name  text,
    paired_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, sender)
);

-- One-time pairing codes, kept only as digests: shown once, used once, soon expired.
CREATE TABLE channel_pairing_codes (
    digest      text PRIMARY KEY,
    channel     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    used_by     text
);

-- Where each channel left off reading: Telegram's update offset, Matrix's sync
-- token, the mailbox's UID validity and next UID.
CREATE TABLE channel_cursors (
    channel     text PRIMARY KEY,
    position    text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One sender's thread in one chat with one butler; follow-ups within the idle
-- window resume its last session.
CREATE TABLE conversations (
    id               uuid PRIMARY KEY,
    channel          text NOT NULL,
    chat             text NOT NULL,
    thread           text NOT NULL DEFAULT '',
    sender           text NOT NULL,
    butler           text NOT NULL,
    last_session_id  uuid,
    started_at       timestamptz NOT NULL DEFAULT now(),
    last_message_at  timestamptz NOT NULL DEFAULT now(),
    closed_at        timestamptz
);
CREATE INDEX conversations_thread_idx
    ON conversations (channel, chat, thread, sender, last_message_at DESC);
CREATE INDEX conversations_latest_idx ON conversations (last_message_at DESC);

-- Every message in ('in') and out ('out') of a channel. An inbound message is
-- recorded before its channel is told it was read, and once only: a channel
-- that delivers it again finds it here.
CREATE TABLE channel_messages (
    id               bigserial PRIMARY KEY,
    channel          text NOT NULL,
    direction        text NOT NULL CHECK (direction IN ('in', 'out')),
    external_id      text NOT NULL,
    conversation_id  uuid REFERENCES conversations (id) ON DELETE SET NULL,
    chat             text NOT NULL,
    thread           text NOT NULL DEFAULT '',
    sender           text NOT NULL,
    display_name     text,
    body             text NOT NULL,
    attachments      jsonb NOT NULL DEFAULT '[]'::jsonb,
    payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
    butler           text,
    session_id       uuid,
    status           text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (channel, direction, external_id)
);
CREATE INDEX channel_messages_conversation_idx ON channel_messages (conversation_id, id);
CREATE INDEX channel_messages_open_idx ON channel_messages (channel, id)
    WHERE status IN ('received', 'handling');
