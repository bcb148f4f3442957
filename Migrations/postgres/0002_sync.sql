-- Suplash Sync, PostgreSQL schema v2 (mirrors Migrations/sqlite/0002_sync.sql): offline
-- sync (issue 3). Times are BIGINT ms since the epoch.

-- One row: the purge horizon of the change feed — the largest change position of a
-- tombstone the background job has purged. A sync token at or below it → 410.
CREATE TABLE sync_state (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    purge_horizon BIGINT NOT NULL
);
INSERT INTO sync_state (singleton, purge_horizon) VALUES (1, 0);

-- Tombstone purge: old tombstones by deletion time (server clock).
CREATE INDEX water_entries_tombstones ON water_entries (updated_at) WHERE deleted = 1;

-- Completed Idempotency-Key requests (spec §7): the first response, replayed on retry.
-- caller = 'u:<user id>', 'a:<admin key name>' or 'ip:<client address>'.
CREATE TABLE idempotency_records (
    caller TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    fingerprint BYTEA NOT NULL,          -- SHA-256 of method, path and SHA-256(body)
    status INTEGER NOT NULL,
    headers TEXT NOT NULL,               -- JSON array of [name, value] (Content-Type, Location, ETag)
    body BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (caller, idempotency_key)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);
