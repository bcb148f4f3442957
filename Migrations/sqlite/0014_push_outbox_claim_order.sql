-- Suplash Sync: the push claim's order from its index (docs/push.md, "Push outbox"). The claim
-- takes due pending rows ORDER BY next_attempt_at, created_at LIMIT n; with the index on
-- next_attempt_at alone every due row was read and sorted per claim, so draining a backlog
-- of 100,000 rows was quadratic. The index now gives the whole order.
DROP INDEX push_outbox_due;
CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at, created_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
