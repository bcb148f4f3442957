-- Suplash Sync: Apple's `email-disabled` / `email-enabled` decided by their
-- `event_time` (docs/apple.md, "Apple's account events"): Apple retries a failed delivery
-- later, so an older event may arrive after a newer one. `held_at` is the event time (ms) of
-- the latest `email-disabled`, `released_at` that of the latest `email-enabled` (NULL: none);
-- the address is held while `released_at` is NULL or older than `held_at`. Rows are kept.
ALTER TABLE mail_holds ADD COLUMN released_at BIGINT;
