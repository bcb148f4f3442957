-- Suplash Sync, PostgreSQL schema v4 (mirrors Migrations/sqlite/0004_mail_apple.sql): email
-- codes, the mail outbox, Sign in with Apple identities. Times are BIGINT ms since the epoch.

-- One live code per (user, purpose); only HMAC-SHA-256(server key, purpose|user id|code).
CREATE TABLE email_codes (
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose TEXT COLLATE "C" NOT NULL,   -- verify_email | reset_password
    code_hash BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, -- wrong codes presented so far
    PRIMARY KEY (user_id, purpose)
);

-- The transactional outbox; `id` is the Idempotency-Key sent to the provider.
CREATE TABLE outbox (
    id TEXT COLLATE "C" PRIMARY KEY,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    delivered_at BIGINT,
    failed_at BIGINT,                    -- abandoned after the last attempt or a permanent error
    last_error TEXT                      -- an error kind, never provider text
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- Sign in with Apple: the token's `sub` names one user.
CREATE TABLE apple_identities (
    sub TEXT COLLATE "C" PRIMARY KEY,
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE INDEX apple_identities_user ON apple_identities (user_id);
