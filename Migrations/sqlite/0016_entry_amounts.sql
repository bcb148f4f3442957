-- Suplash Sync, schema v16: the summary's recent amounts without reading the day's entries
-- (spec §4 summary `recentAmountsMl`; docs/decisions.md, "Summary reads a bounded number of rows").

-- One row per distinct amount among the user's live entries: how many live entries have it and
-- the newest of them (`last_logged_at`, then `last_id`, the order entries are listed in). Maintained in the transaction of every entry write, edit,
-- delete, batch, import and sync push (`EntryAmounts`, called by `EntryBookkeeping`) from the
-- write's deltas alone. When a write removes what may be an amount's newest entry, the row is
-- marked `stale` (its newest is then an upper bound; also when an entry was added without its id) and the next entry write of the
-- user re-reads it through `water_entries_amounts`; the summary re-reads stale rows itself.
CREATE TABLE entry_amounts (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    amount_ml INTEGER NOT NULL,
    live_count INTEGER NOT NULL,
    last_logged_at INTEGER NOT NULL,
    last_id TEXT NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, amount_ml)
) WITHOUT ROWID;
-- The summary's newest amounts (user, fresh rows by `last_logged_at`) and the stale rows.
CREATE INDEX entry_amounts_recent ON entry_amounts (user_id, stale, last_logged_at, last_id);

-- The newest live entry of one amount before an instant (the summary, the stale rows' re-read).
CREATE INDEX water_entries_amounts ON water_entries (user_id, amount_ml, logged_at, id) WHERE deleted = 0;

-- Existing users' amounts.
INSERT INTO entry_amounts (user_id, amount_ml, live_count, last_logged_at, last_id, stale)
SELECT g.user_id, g.amount_ml, g.n, g.at, (
    SELECT MAX(w.id) FROM water_entries w
    WHERE w.user_id = g.user_id AND w.amount_ml = g.amount_ml AND w.deleted = 0 AND w.logged_at = g.at), 0
FROM (
    SELECT user_id, amount_ml, COUNT(*) AS n, MAX(logged_at) AS at FROM water_entries WHERE deleted = 0
    GROUP BY user_id, amount_ml
) AS g;
