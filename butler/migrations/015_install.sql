-- Which install of a butler this schema's data belongs to, and which daemon serves it
-- now (docs/data.md). One row: the butler folder that first opened the schema, and the
-- pid and host of the daemon holding it (its advisory lock is the proof; these say who).
CREATE TABLE butler_install (
    only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    name          text NOT NULL,
    folder        text NOT NULL,
    claimed_at    timestamptz NOT NULL DEFAULT now(),
    holder_pid    integer,
    holder_host   text,
    held_since    timestamptz
);
