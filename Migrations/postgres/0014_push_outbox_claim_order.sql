-- Suplash Sync, PostgreSQL (mirrors Migrations/sqlite/0014_push_outbox_claim_order.sql): the
-- push claim's order (next_attempt_at, created_at) from its index (docs/push.md, "Push
-- outbox"); with the index on next_attempt_at alone every due row was read and sorted per claim.
DROP INDEX push_outbox_due;
CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at, created_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
