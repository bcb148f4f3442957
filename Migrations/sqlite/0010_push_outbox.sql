-- Suplash Sync, schema v10: the push outbox (spec §9; docs/push.md, "Push outbox"). Times are
-- INTEGER milliseconds since the Unix epoch (UTC).

-- One row per push to one device's token of one push type, written in the same transaction as
-- the change that causes it. The sender claims due rows (OutboxClaim: `next_attempt_at` moves
-- to the lease end), sends them and records the outcome: `delivered_at` (sent, state `sent`)
-- or `failed_at` (state `failed`, `reason` an APNs reason code or ours). Pending rows past
-- `expires_at` are deleted when claimed; sent and failed rows are purged after 7 days (the
-- recent sends decide the coalescing of background pushes). The token is read at send time
-- from device_tokens, so a moved or removed token is never used.
CREATE TABLE push_outbox (
    id TEXT PRIMARY KEY,                 -- lower-case UUID, the apns-id
    user_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    push_type TEXT NOT NULL,             -- alert | background | complication | widgets
    payload TEXT NOT NULL,               -- the APNs JSON payload
    collapse_id TEXT,
    due_at INTEGER NOT NULL,             -- when it was first due
    expires_at INTEGER NOT NULL,         -- apns-expiration; not sent after
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,    -- due, retry or lease end
    state TEXT NOT NULL DEFAULT 'pending', -- pending | sending (claimed, handed to APNs) | sent | failed
    reason TEXT,                         -- the last failure's reason code
    created_at INTEGER NOT NULL,
    delivered_at INTEGER,                -- sent
    failed_at INTEGER,
    FOREIGN KEY (user_id, device_id) REFERENCES devices (user_id, id) ON DELETE CASCADE
);
-- Coalescing: at most one pending push per device and push type (an upsert updates it).
CREATE UNIQUE INDEX push_outbox_pending ON push_outbox (user_id, device_id, push_type)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
-- The claim: due pending rows.
CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
-- A device's recent sends (coalescing windows, hourly caps).
CREATE INDEX push_outbox_sent ON push_outbox (user_id, device_id, push_type, delivered_at)
    WHERE delivered_at IS NOT NULL;
-- The purge.
CREATE INDEX push_outbox_done ON push_outbox (created_at) WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;
