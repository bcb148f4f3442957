-- Suplash Sync, schema v10: Sign in with Apple's whole lifecycle (spec §3, §9 "Apple account
-- events"; docs/apple.md). Times are BIGINT milliseconds since the Unix epoch (UTC).

-- Apple's refresh token from the authorization-code exchange, kept to revoke it when the
-- account is deleted. `refresh_token` is a sealed envelope (`s1.<keyId>.…`, AES-256-GCM)
-- bound to (apple_identities, refresh_token, sub); `client_id` is the identity token's
-- audience the code was issued to. NULL for identities linked without a code.
ALTER TABLE apple_identities ADD COLUMN client_id TEXT;
ALTER TABLE apple_identities ADD COLUMN refresh_token TEXT;

-- Revoke jobs: queued in the erasure's transaction, sent by the revoke thread of any
-- instance (claimed like the mail outbox). The sealed token is the identity's envelope,
-- unchanged (still bound to its `sub`), and is blanked once the job ends.
CREATE TABLE apple_revoke_jobs (
    id TEXT COLLATE "C" PRIMARY KEY,
    sub TEXT COLLATE "C" NOT NULL,
    client_id TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    delivered_at BIGINT,                -- revoked (200) or already revoked (invalid_grant)
    failed_at BIGINT,                   -- given up: attempts used up, or refused for good
    last_error TEXT                      -- an Apple error code, never Apple's text
);
CREATE INDEX apple_revoke_jobs_due ON apple_revoke_jobs (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- Apple's account events already applied, by `jti` (Apple retries and may repeat one).
CREATE TABLE apple_notifications (
    jti TEXT COLLATE "C" PRIMARY KEY,
    received_at BIGINT NOT NULL
);

-- Relay addresses whose forwarding the user turned off (`email-disabled`): mail to them waits
-- until `email-enabled`.
CREATE TABLE mail_holds (
    address TEXT COLLATE "C" PRIMARY KEY,
    held_at BIGINT NOT NULL
);
