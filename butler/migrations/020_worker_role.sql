-- A worker's least privilege (docs/security.md, "Workers"; docs/scaling.md, "A worker's
-- own database role").
--
-- `butler worker` connects as a LOGIN role member of the group role `butler_worker`
-- (made by `butler worker --init-role`), which may touch only the job queue of this
-- schema: PgQueuer's tables (picking, beating and closing jobs, never writing a job's
-- payload), the `workers` rows, the migration level. The butler's own rows (sessions,
-- state, credentials, memory, channels, deliveries, results) it can neither read nor
-- write. The four things a worker must do to a session's row go through the functions
-- below, SECURITY DEFINER (they run as this schema's owner) and checked, rather than
-- column grants on `sessions`: a column grant could not say "only the session whose job
-- you picked" nor "only with the key of the claim you hold", and it would still let the
-- role read every row's metadata.
--
-- Roles are the cluster's, not the schema's: the group is made here when absent (by a
-- daemon allowed to make roles; else `--init-role` makes it and grants again, calling
-- worker_role_grants() in each schema), and every schema's migration grants on its own
-- objects only.

-- The functions below keep this schema as their search_path, with pg_temp last: a
-- SECURITY DEFINER function searching pg_temp first (its default) would read a temporary
-- `sessions` its caller made. Local to this migration's transaction.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

-- Whether the role running this may pick the session's job: a job of a session-vN
-- entrypoint, picked, naming the session. The payload is the daemon's (the worker role
-- may not write it), so a worker cannot point a job at a session of the daemon's own.
CREATE FUNCTION worker_job_picked(p_session uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT EXISTS (
        SELECT 1 FROM pgqueuer
        WHERE status = 'picked' AND entrypoint LIKE 'session-v%'
          AND convert_from(payload, 'UTF8')::jsonb -> 'session' ->> 'id' = p_session::text
    )
$$;

-- The claim (store/session_jobs.py, SessionJobs.claim): mark the session as the worker's
-- in this pickup, with the digests of the token and key it minted. NULL when it is the
-- first claim or this very pickup's again (a retry after a lost reply); else the worker
-- that claimed it before (and stopped: its job came round again), whose claim this one
-- takes over. Refused for a session no picked job names.
CREATE FUNCTION worker_claim(
    p_session uuid, p_worker text, p_pickup text, p_token_digest text, p_key_digest text
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    claim jsonb := jsonb_build_object(
        'worker', left(p_worker, 200), 'pickup', left(p_pickup, 64),
        'token_digest', left(p_token_digest, 64), 'key_digest', left(p_key_digest, 64)
    );
    before_worker text;
    before_pickup text;
BEGIN
    IF NOT worker_job_picked(p_session) THEN
        RAISE EXCEPTION 'no picked job names session %', p_session
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE sessions SET metadata = metadata || claim
        WHERE id = p_session AND NOT metadata ? 'worker';
    IF FOUND THEN
        RETURN NULL;
    END IF;
    SELECT metadata ->> 'worker', metadata ->> 'pickup' INTO before_worker, before_pickup
        FROM sessions WHERE id = p_session;
    IF NOT FOUND OR before_pickup IS NOT DISTINCT FROM p_pickup THEN
        RETURN NULL;
    END IF;
    UPDATE sessions SET metadata = metadata || claim
        WHERE id = p_session AND metadata ->> 'pickup' IS NOT DISTINCT FROM before_pickup;
    RETURN before_worker;
END
$$;

-- Whether the session's row is open (a result is still awaited): nothing else of it.
CREATE FUNCTION worker_session_open(p_session uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT coalesce(
        (SELECT status IN ('pending', 'running') FROM sessions WHERE id = p_session), false
    )
$$;

-- A worker's result, taken only with the key whose digest the session's claim holds:
-- anyone else's (a forgery, a worker whose claim was taken over) is refused here, before
-- any row is written. The daemon checks the key again when it reads the result.
CREATE FUNCTION worker_result(p_session uuid, p_worker text, p_result jsonb, p_key text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    held text;
BEGIN
    SELECT metadata ->> 'key_digest' INTO held FROM sessions WHERE id = p_session;
    IF held IS NULL OR held <> encode(sha256(convert_to(p_key, 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'a result for session % is taken only from the worker that holds its claim', p_session
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO session_results (session_id, worker, result)
        VALUES (p_session, left(p_worker, 200), p_result || jsonb_build_object('key', p_key))
        ON CONFLICT (session_id) DO UPDATE SET worker = EXCLUDED.worker, result = EXCLUDED.result
        WHERE session_results.result ->> 'key' IS DISTINCT FROM EXCLUDED.result ->> 'key';
END
$$;

-- What the jail around the session's runtime saw (metadata.sandbox, as a local session
-- records it): that one key, bounded, on an open session a picked job names.
CREATE FUNCTION worker_note_sandbox(p_session uuid, p_sandbox jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT worker_job_picked(p_session) THEN
        RAISE EXCEPTION 'no picked job names session %', p_session
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF octet_length(p_sandbox::text) > 65536 THEN
        RAISE EXCEPTION 'a sandbox summary of at most 64 KiB' USING ERRCODE = 'program_limit_exceeded';
    END IF;
    UPDATE sessions SET metadata = metadata || jsonb_build_object('sandbox', p_sandbox)
        WHERE id = p_session AND status IN ('pending', 'running');
END
$$;

REVOKE ALL ON FUNCTION worker_job_picked(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION worker_claim(uuid, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION worker_session_open(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION worker_result(uuid, text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION worker_note_sandbox(uuid, jsonb) FROM PUBLIC;

-- Everything the group may touch in this schema; run by this migration and again by
-- `butler worker --init-role` (for a schema migrated before the group existed). A job's
-- payload, entrypoint and priority are the daemon's: the group updates only the columns
-- PgQueuer's pick, heartbeat, retry and failure write.
CREATE FUNCTION worker_role_grants() RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    s text := quote_ident(current_schema());
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %s TO butler_worker', s);
    EXECUTE format('GRANT SELECT ON %s.butler_migrations TO butler_worker', s);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.workers TO butler_worker', s);
    EXECUTE format('GRANT SELECT, DELETE ON %s.pgqueuer TO butler_worker', s);
    EXECUTE format(
        'GRANT UPDATE (status, updated, heartbeat, queue_manager_id, slot, execute_after,'
        ' attempts) ON %s.pgqueuer TO butler_worker', s);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.pgqueuer_log TO butler_worker', s);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.pgqueuer_statistics TO butler_worker', s);
    EXECUTE format(
        'GRANT USAGE ON SEQUENCE %1$s.pgqueuer_log_id_seq, %1$s.pgqueuer_statistics_id_seq'
        ' TO butler_worker', s);
    EXECUTE format(
        'GRANT EXECUTE ON FUNCTION %1$s.worker_claim(uuid, text, text, text, text),'
        ' %1$s.worker_session_open(uuid), %1$s.worker_result(uuid, text, jsonb, text),'
        ' %1$s.worker_note_sandbox(uuid, jsonb) TO butler_worker', s);
END
$$;
REVOKE ALL ON FUNCTION worker_role_grants() FROM PUBLIC;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'butler_worker') THEN
        BEGIN
            CREATE ROLE butler_worker NOLOGIN;
        EXCEPTION
            -- Another schema's migration made it meanwhile.
            WHEN duplicate_object OR unique_violation THEN NULL;
            -- A daemon whose role may not make roles: `butler worker --init-role` will.
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'role butler_worker not made: run butler worker --init-role';
                RETURN;
        END;
    END IF;
    PERFORM worker_role_grants();
END
$$;
