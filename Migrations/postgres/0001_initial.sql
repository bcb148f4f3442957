-- Suplash Sync, PostgreSQL schema v1 (mirrors Migrations/sqlite/0001_initial.sql): identity,
-- change sequence, accounts, sessions, admin keys, water entries. Times are BIGINT
-- milliseconds since the Unix epoch (UTC). Text keys that are ordered or compared by range
-- use COLLATE "C", so the order is the byte order SQLite uses, whatever the cluster locale.

-- One row: this database's id. Sync tokens carry it (spec §5).
CREATE TABLE database_identity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    database_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
INSERT INTO database_identity (singleton, database_id, created_at)
VALUES (1, replace(gen_random_uuid()::text, '-', ''), (extract(epoch FROM clock_timestamp()) * 1000)::bigint);

-- The change sequence: every write transaction takes the next position with
-- UPDATE … RETURNING on this one row and holds its row lock until it commits, so position
-- order is commit order and there are no gaps (PostgresTransaction.takeChangePosition).
CREATE TABLE change_sequence (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    position BIGINT NOT NULL
);
INSERT INTO change_sequence (singleton, position) VALUES (1, 0);

CREATE TABLE users (
    id TEXT COLLATE "C" PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    email_verified INTEGER NOT NULL DEFAULT 0,
    password_hash TEXT,
    display_name TEXT,
    weight_kg DOUBLE PRECISION,
    activity_level TEXT NOT NULL,
    wake_time TEXT NOT NULL,
    sleep_time TEXT NOT NULL,
    timezone TEXT NOT NULL,
    locale TEXT NOT NULL,
    daily_goal_ml BIGINT,
    cup_sizes_ml TEXT NOT NULL,          -- comma-separated ml values, e.g. 150,250,330,500
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    change_position BIGINT NOT NULL,
    lww_at BIGINT NOT NULL,              -- last-write-wins clock (spec §5), ms
    lww_device TEXT NOT NULL DEFAULT ''  -- last-write-wins tie-break
);

CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    revoked_reason TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Refresh tokens are stored only as SHA-256 hashes. A rotated token keeps its row
-- (used_at set) so that a reuse can be recognised and revoke the family.
CREATE TABLE refresh_tokens (
    token_hash BYTEA PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

CREATE TABLE admin_keys (
    name TEXT COLLATE "C" PRIMARY KEY,
    key_hash BYTEA NOT NULL UNIQUE,      -- SHA-256 of the 256-bit key
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE TABLE water_entries (
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT COLLATE "C" NOT NULL,
    amount_ml BIGINT NOT NULL,
    logged_at BIGINT NOT NULL,
    source TEXT NOT NULL,
    health_kit_uuid TEXT,
    note TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,  -- 1 = tombstone, kept for the sync feed
    change_position BIGINT NOT NULL,
    lww_at BIGINT NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
);
-- The list query (keyset pagination, newest first) is served by this index.
CREATE INDEX water_entries_list ON water_entries (user_id, deleted, logged_at DESC, id DESC);
-- HealthKit dedupe: one live entry per sample per user.
CREATE UNIQUE INDEX water_entries_health_kit ON water_entries (user_id, health_kit_uuid)
    WHERE health_kit_uuid IS NOT NULL AND deleted = 0;
-- The sync feed reads a user's changes by position.
CREATE INDEX water_entries_changes ON water_entries (user_id, change_position);
