-- Suplash Sync, schema v3: the hydration and bills domain (issue 4). Version 0002 is
-- reserved for the sync feed. Times are INTEGER ms since the Unix epoch (UTC); local dates
-- are TEXT 'YYYY-MM-DD' in the profile's time zone.

-- water_logs/{uid}/days/{date}: context that raises a day's goal (spec §4, §6).
CREATE TABLE days (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT NOT NULL,
    max_temperature_c REAL,
    active_minutes INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    change_position INTEGER NOT NULL,
    lww_at INTEGER NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, local_date)
) WITHOUT ROWID;
CREATE INDEX days_changes ON days (user_id, change_position);

-- Per-day aggregate of live entries, bucketed in the profile's time zone, maintained in
-- the writer transaction of every entry write (SQLiteStore.entriesChanged). goal_met is
-- evaluated with the day's goal at that time and re-evaluated when the profile's goal or
-- time zone changes (a time-zone change re-buckets every entry). Not a synced collection.
CREATE TABLE daily_totals (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT NOT NULL,
    total_ml INTEGER NOT NULL,
    entries_count INTEGER NOT NULL,
    goal_met INTEGER NOT NULL,
    PRIMARY KEY (user_id, local_date)
) WITHOUT ROWID;
-- Streak walks read consecutive goal days newest first.
CREATE INDEX daily_totals_met ON daily_totals (user_id, goal_met, local_date);

-- invoices/{uid}/bills/{billId} (spec §4). consumption_milli_m3 is m³ × 1000 as an
-- integer, exact for the 3 decimals the API accepts.
CREATE TABLE bills (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    provider TEXT NOT NULL,
    subscriber_no TEXT NOT NULL,
    period TEXT NOT NULL,                -- 'YYYY-MM'
    consumption_milli_m3 INTEGER NOT NULL,
    amount_minor INTEGER NOT NULL,
    currency TEXT NOT NULL,
    due_date TEXT NOT NULL,              -- 'YYYY-MM-DD'
    paid_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,  -- 1 = tombstone, kept for the sync feed
    change_position INTEGER NOT NULL,
    lww_at INTEGER NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
-- One live bill per subscription and month (409 bill_exists); also serves comparison and estimate.
CREATE UNIQUE INDEX bills_subscription ON bills (user_id, provider, subscriber_no, period) WHERE deleted = 0;
-- The list (period desc, id desc, keyset pages).
CREATE INDEX bills_list ON bills (user_id, deleted, period DESC, id DESC);
-- Payment reminders: unpaid bills by due date.
CREATE INDEX bills_due ON bills (user_id, due_date) WHERE deleted = 0 AND paid_at IS NULL;
CREATE INDEX bills_changes ON bills (user_id, change_position);

-- achievements/{uid} (spec §4): one row per user, written in the same transaction as the
-- entry or day write that changes it.
CREATE TABLE achievements (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    latest_run_end TEXT,                 -- last day of the most recent run of goal days
    latest_run_length INTEGER NOT NULL,
    longest_streak INTEGER NOT NULL,
    total_ml INTEGER NOT NULL,
    days_goal_met INTEGER NOT NULL,
    badges TEXT NOT NULL,                -- 'id:earnedAtMs,…' oldest first
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    change_position INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX achievements_changes ON achievements (user_id, change_position);

-- Erased accounts (ids only, no personal data): the revocation view refuses their tokens
-- at once and after a restart, for one access-token lifetime. Pruned after a day.
CREATE TABLE erased_accounts (
    user_id TEXT PRIMARY KEY,
    erased_at INTEGER NOT NULL
) WITHOUT ROWID;
