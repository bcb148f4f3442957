-- Suplash Sync, PostgreSQL schema v5 (mirrors Migrations/sqlite/0005_feed_indexes.sql): the
-- domain collections join the sync feed; bill tombstones take part in the purge.

-- Tombstone purge: old bill tombstones by deletion time (server clock).
CREATE INDEX bills_tombstones ON bills (updated_at) WHERE deleted = 1;
