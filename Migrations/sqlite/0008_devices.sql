-- Suplash Sync, schema v8: the device registry of push delivery (spec §9 "Devices";
-- docs/push.md). Times are INTEGER milliseconds since the Unix epoch (UTC).

-- One row per (user, device): `id` is the client's X-Device-ID (a lower-case UUID). The same
-- physical device signed in to another account is another row there. `session_id` is the
-- session that registered it last (NULL for an admin key): logging that session out removes
-- the device's tokens. The rows go with the account (ON DELETE CASCADE from users).
CREATE TABLE devices (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    platform TEXT NOT NULL,              -- ios | ipados | watchos | macos
    bundle_id TEXT NOT NULL,             -- one of apns.bundleIds (the APNs topic's base)
    environment TEXT NOT NULL,           -- sandbox | production (which APNs origin)
    locale TEXT,
    app_version TEXT,
    session_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,       -- the last registration: apps register at every launch
    PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
-- Eviction of the least recently seen past 20 devices per user.
CREATE INDEX devices_user_seen ON devices (user_id, last_seen_at);
-- Logout: the devices a session registered.
CREATE INDEX devices_session ON devices (session_id) WHERE session_id IS NOT NULL;

-- A device's push tokens, one per push type (alert and background carry the app's APNs
-- token, complication a PushKit token, widgets a WidgetKit token). The push outbox will
-- reference (user_id, device_id, push_type). A token belongs to one device of one account at
-- a time: registering it elsewhere moves it (the unique index below).
CREATE TABLE device_tokens (
    user_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    push_type TEXT NOT NULL,             -- alert | background | complication | widgets
    token BLOB NOT NULL,                 -- the token's bytes (sent as hex)
    registered_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, device_id, push_type),
    FOREIGN KEY (user_id, device_id) REFERENCES devices (user_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE UNIQUE INDEX device_tokens_token ON device_tokens (push_type, token);
