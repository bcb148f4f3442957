-- Suplash Sync, schema v6 (mirrored by Migrations/postgres/0006_shared_limits.sql): state
-- that several server instances on one PostgreSQL database share (issue 8).
--
-- Idempotency-Key "still running" claims need no new table: a claim would be a row of
-- idempotency_records with status 0. On SQLite the server is one process and keeps its
-- running keys in memory (no extra write per keyed request); SQLiteStore still implements
-- the row claim so both stores answer the same behavioural tests.

-- Rate-limit token buckets as on PostgreSQL. On SQLite the server keeps its buckets in
-- memory (one process; ratelimit.store = memory), so this table stays empty; it exists so
-- both schemas have the same tables (migrate-data, schema comparisons).
CREATE TABLE rate_limit_buckets (
    bucket BLOB PRIMARY KEY,
    tokens REAL NOT NULL,
    allowed INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
