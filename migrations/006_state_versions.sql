-- A version per state key, so two runtimes can update one key without losing a write:
-- state_set(..., if_version=N) stores only while the key is still at version N.
ALTER TABLE state ADD COLUMN version bigint NOT NULL DEFAULT 1;
