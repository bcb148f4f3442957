-- Suplash Sync, SQLite schema v1: identity, change sequence, accounts, sessions,
-- admin keys, water entries. Times are INTEGER milliseconds since the Unix epoch (UTC).

-- One row: this database's id. Sync tokens carry it (spec §5), so a token from another
-- database is refused with 410.
CREATE TABLE database_identity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    database_id TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
INSERT INTO database_identity (singleton, database_id, created_at)
VALUES (1, lower(hex(randomblob(16))), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));

-- The change sequence: every committed write takes the next position inside its own
-- transaction, so position order is commit order (design notes, "group commit").
CREATE TABLE change_sequence (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    position INTEGER NOT NULL
);
INSERT INTO change_sequence (singleton, position) VALUES (1, 0);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    email_verified INTEGER NOT NULL DEFAULT 0,
    password_hash TEXT,
    display_name TEXT,
    weight_kg REAL,
    activity_level TEXT NOT NULL,
    wake_time TEXT NOT NULL,
    sleep_time TEXT NOT NULL,
    timezone TEXT NOT NULL,
    locale TEXT NOT NULL,
    daily_goal_ml INTEGER,
    cup_sizes_ml TEXT NOT NULL,          -- comma-separated ml values, e.g. 150,250,330,500
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    change_position INTEGER NOT NULL,
    lww_at INTEGER NOT NULL,             -- last-write-wins clock (spec §5), ms
    lww_device TEXT NOT NULL DEFAULT ''  -- last-write-wins tie-break
) WITHOUT ROWID;

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    revoked_reason TEXT
) WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Refresh tokens are stored only as SHA-256 hashes. A rotated token keeps its row
-- (used_at set) so that a reuse can be recognised and revoke the family.
CREATE TABLE refresh_tokens (
    token_hash BLOB PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
) WITHOUT ROWID;
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

CREATE TABLE admin_keys (
    name TEXT PRIMARY KEY,
    key_hash BLOB NOT NULL UNIQUE,       -- SHA-256 of the 256-bit key
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;

CREATE TABLE water_entries (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    amount_ml INTEGER NOT NULL,
    logged_at INTEGER NOT NULL,
    source TEXT NOT NULL,
    health_kit_uuid TEXT,
    note TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,  -- 1 = tombstone, kept for the sync feed
    change_position INTEGER NOT NULL,
    lww_at INTEGER NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
-- The list query (keyset pagination, newest first) is served by this index.
CREATE INDEX water_entries_list ON water_entries (user_id, deleted, logged_at DESC, id DESC);
-- HealthKit dedupe: one live entry per sample per user.
CREATE UNIQUE INDEX water_entries_health_kit ON water_entries (user_id, health_kit_uuid)
    WHERE health_kit_uuid IS NOT NULL AND deleted = 0;
-- The sync feed reads a user's changes by position.
CREATE INDEX water_entries_changes ON water_entries (user_id, change_position);
