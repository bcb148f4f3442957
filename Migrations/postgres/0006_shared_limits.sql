-- Suplash Sync, PostgreSQL schema v6 (mirrors Migrations/sqlite/0006_shared_limits.sql):
-- state that several server instances on one database must share (issue 8).
--
-- Idempotency-Key "still running" claims need no new table: a claim is a row of
-- idempotency_records with status 0, an empty body and expires_at = the lease end, so the
-- primary key (caller, idempotency_key) decides between two instances, and completing
-- updates the claim in place.

-- Rate-limit token buckets (spec §7) shared by every instance, and the failed-login budget
-- per account. bucket = HMAC-SHA-256 (key derived from the JWT secret) of the layer name
-- and the client address, device id, user id or email: never the raw key. Times are
-- seconds since the epoch by the database clock (statement_timestamp()), so instances with
-- skewed clocks agree. UNLOGGED: no WAL per request (commits wait for no flush); after a
-- crash the table is empty, which means every bucket is full — the state of an idle one.
-- No index on expires_at: every take changes it, and without an index the update can stay
-- HOT (fillfactor leaves room on the page); the purge job scans the small table.
CREATE UNLOGGED TABLE rate_limit_buckets (
    bucket BYTEA PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    allowed BOOLEAN NOT NULL,             -- whether the last take found a token
    updated_at DOUBLE PRECISION NOT NULL, -- last take
    expires_at DOUBLE PRECISION NOT NULL  -- full again by then (last take + window): purgeable
) WITH (fillfactor = 70);
