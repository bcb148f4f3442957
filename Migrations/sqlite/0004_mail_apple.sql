-- Suplash Sync, schema v4: email codes, the mail outbox, Sign in with Apple identities.
-- Times are INTEGER milliseconds since the Unix epoch (UTC).

-- One live code per (user, purpose). Only a MAC of the code is stored:
-- HMAC-SHA-256(server key, purpose "|" user id "|" code). A new code replaces the old one.
CREATE TABLE email_codes (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose TEXT NOT NULL,               -- verify_email | reset_password
    code_hash BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, -- wrong codes presented so far
    PRIMARY KEY (user_id, purpose)
) WITHOUT ROWID;

-- The transactional outbox: a message is inserted in the same transaction as the code it
-- carries and delivered later by the delivery worker. `id` is the Idempotency-Key sent to
-- the provider. The body is cleared once the message is delivered or abandoned.
CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    delivered_at INTEGER,
    failed_at INTEGER,                   -- abandoned after the last attempt or a permanent error
    last_error TEXT                      -- an error kind, never provider text
) WITHOUT ROWID;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- Sign in with Apple: the token's `sub` (stable per Apple ID and team) names one user.
CREATE TABLE apple_identities (
    sub TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX apple_identities_user ON apple_identities (user_id);
