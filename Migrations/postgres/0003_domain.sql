-- Suplash Sync, PostgreSQL schema v3 (mirrors Migrations/sqlite/0003_domain.sql): the
-- hydration and bills domain (issue 4). Times are BIGINT ms since the Unix epoch (UTC);
-- local dates are TEXT 'YYYY-MM-DD' in the profile's time zone.

-- water_logs/{uid}/days/{date}: context that raises a day's goal (spec §4, §6).
CREATE TABLE days (
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT COLLATE "C" NOT NULL,
    max_temperature_c DOUBLE PRECISION,
    active_minutes BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    change_position BIGINT NOT NULL,
    lww_at BIGINT NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, local_date)
);
CREATE INDEX days_changes ON days (user_id, change_position);

-- Per-day aggregate of live entries, bucketed in the profile's time zone, maintained in
-- the transaction of every entry write. Not a synced collection.
CREATE TABLE daily_totals (
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT COLLATE "C" NOT NULL,
    total_ml BIGINT NOT NULL,
    entries_count BIGINT NOT NULL,
    goal_met INTEGER NOT NULL,
    PRIMARY KEY (user_id, local_date)
);
-- Streak walks read consecutive goal days newest first.
CREATE INDEX daily_totals_met ON daily_totals (user_id, goal_met, local_date);

-- invoices/{uid}/bills/{billId} (spec §4). consumption_milli_m3 is m³ × 1000.
CREATE TABLE bills (
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT COLLATE "C" NOT NULL,
    provider TEXT COLLATE "C" NOT NULL,
    subscriber_no TEXT COLLATE "C" NOT NULL,
    period TEXT COLLATE "C" NOT NULL,    -- 'YYYY-MM'
    consumption_milli_m3 BIGINT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    due_date TEXT COLLATE "C" NOT NULL,  -- 'YYYY-MM-DD'
    paid_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,  -- 1 = tombstone, kept for the sync feed
    change_position BIGINT NOT NULL,
    lww_at BIGINT NOT NULL,
    lww_device TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
);
-- One live bill per subscription and month (409 bill_exists).
CREATE UNIQUE INDEX bills_subscription ON bills (user_id, provider, subscriber_no, period) WHERE deleted = 0;
-- The list (period desc, id desc, keyset pages).
CREATE INDEX bills_list ON bills (user_id, deleted, period DESC, id DESC);
-- Payment reminders: unpaid bills by due date.
CREATE INDEX bills_due ON bills (user_id, due_date) WHERE deleted = 0 AND paid_at IS NULL;
CREATE INDEX bills_changes ON bills (user_id, change_position);

-- achievements/{uid} (spec §4): one row per user, written in the same transaction as the
-- entry or day write that changes it.
CREATE TABLE achievements (
    user_id TEXT COLLATE "C" PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    latest_run_end TEXT,                 -- last day of the most recent run of goal days
    latest_run_length BIGINT NOT NULL,
    longest_streak BIGINT NOT NULL,
    total_ml BIGINT NOT NULL,
    days_goal_met BIGINT NOT NULL,
    badges TEXT NOT NULL,                -- 'id:earnedAtMs,…' oldest first
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    change_position BIGINT NOT NULL
);
CREATE INDEX achievements_changes ON achievements (user_id, change_position);

-- Erased accounts (ids only, no personal data). Pruned after a day.
CREATE TABLE erased_accounts (
    user_id TEXT COLLATE "C" PRIMARY KEY,
    erased_at BIGINT NOT NULL
);
