-- The workers that serve this butler (`butler workers`, the roster page; docs/scaling.md).
--
-- PgQueuer beats per picked job (pgqueuer.heartbeat), so it knows a worker only
-- while that worker holds a job: an idle worker, its host, what it serves and
-- how many sessions it may run are not in its tables. Each `butler worker`
-- keeps one row here per butler it serves and beats it; its running sessions
-- are counted from PgQueuer's own picked jobs (queue_manager_id).
CREATE TABLE workers (
    name             text PRIMARY KEY,       -- "<host>:<pid>", as on session rows (metadata.worker)
    host             text NOT NULL,
    butlers          text[] NOT NULL,        -- every butler the worker serves
    capacity         integer NOT NULL,       -- sessions it runs at once for each butler
    queue_manager_id uuid NOT NULL,          -- its PgQueuer queue manager in this schema
    beat_s           real NOT NULL,          -- how often it beats: a row older than 3 beats is lost
    started_at       timestamptz NOT NULL DEFAULT now(),
    heartbeat_at     timestamptz NOT NULL DEFAULT now()
);
