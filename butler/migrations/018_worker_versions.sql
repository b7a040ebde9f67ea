-- What each worker speaks (docs/scaling.md, "Versions agree"): a daemon hands no
-- session to a worker of another hand-over protocol, says so in one line rather
-- than letting the session time out, and `butler workers` shows it. A worker
-- older than these columns leaves them NULL: it speaks no protocol this daemon
-- knows (and the queue's entrypoint, named for the protocol, gives it no job).
ALTER TABLE workers ADD COLUMN version   text;     -- its butler version
ALTER TABLE workers ADD COLUMN protocol  integer;  -- the hand-over it speaks (store/session_jobs.py)
ALTER TABLE workers ADD COLUMN migration integer;  -- the newest migration it knows
