-- Suplash Sync, schema v5: the domain collections join the sync feed (spec §5). Version
-- 0004 is reserved for parallel work. The feed sources of bills, days and achievements are
-- served by the (user_id, change_position) indexes of 0003 (bills_changes, days_changes,
-- achievements_changes); bill tombstones now take part in the purge.

-- Tombstone purge: old bill tombstones by deletion time (server clock), as water_entries_tombstones.
CREATE INDEX bills_tombstones ON bills (updated_at) WHERE deleted = 1;
