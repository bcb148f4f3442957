-- Suplash Sync, schema v13: APNs device tokens sealed at rest (docs/apple.md, "Sealed
-- secrets"); the purge of ended revoke jobs and old Apple account events; mail expiring with
-- its code. Times are INTEGER milliseconds since the Unix epoch (UTC).

-- `sealed_token` is the token's envelope (`s1.<keyId>.…`, AES-256-GCM) bound to
-- (device_tokens, token, `<user_id>/<device_id>/<push_type>`); `token_index` its blind index
-- (HMAC-SHA-256 under a subkey of the sealing key, 64 hex digits): every lookup and
-- de-duplication of a token uses it. `token` (the plaintext bytes of rows written before this
-- version) is emptied when the server seals those rows at start-up (then VACUUM), or the rows
-- are deleted when no sealing key is configured; sealed rows store an empty `token`.
ALTER TABLE device_tokens ADD COLUMN sealed_token TEXT;
ALTER TABLE device_tokens ADD COLUMN token_index TEXT;
DROP INDEX device_tokens_token;
CREATE UNIQUE INDEX device_tokens_index ON device_tokens (push_type, token_index);

-- The purge of remembered account events (`jti`s older than 8 days).
CREATE INDEX apple_notifications_received ON apple_notifications (received_at);
-- The purge of ended revoke jobs.
CREATE INDEX apple_revoke_jobs_ended ON apple_revoke_jobs (coalesce(delivered_at, failed_at))
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;

-- Mail carrying a sign-in or verification code expires with its code: a message still
-- pending at `expires_at` (held for a relay address whose forwarding is off, or retried past
-- it) is deleted, code and all. NULL for messages queued before this version.
ALTER TABLE outbox ADD COLUMN expires_at INTEGER;
CREATE INDEX outbox_expires ON outbox (expires_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
