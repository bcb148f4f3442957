-- Suplash Sync, schema v12: smart reminders' storage (spec §9 "Reminders"; docs/reminders.md,
-- "Storage"). Times are INTEGER milliseconds since the Unix epoch (UTC).

-- The user's drinking per local hour over the last 14 days (the adaptive curve's
-- `HourlyDrinking`), maintained in the transaction of every entry write, edit, delete, batch,
-- import and sync push (`HourlyTotals`, called by `EntryBookkeeping`); rebuilt from the live
-- entries when the profile's time zone changes. `local_date` / `hour` are the entry's local day
-- (`YYYY-MM-DD`) and wall-clock hour (0–23) in the profile's zone; rows before the kept window
-- are pruned by the same writes.
CREATE TABLE drinking_hours (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT NOT NULL,
    hour INTEGER NOT NULL,
    amount_ml INTEGER NOT NULL,
    PRIMARY KEY (user_id, local_date, hour)
);

-- One row per reminder: the next hydration reminder (at most one pending per user), bill and
-- campaign reminders, and their outcomes (the history `GET /v1/users/{uid}/reminders` shows).
CREATE TABLE reminders (
    id TEXT PRIMARY KEY,                 -- lower-case UUID; `:drink` uses it as the entry's id
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,                  -- hydration | bill | campaign
    due_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending', -- pending | sent | acted | snoozed | dismissed | opened | ignored | cancelled
    suggested_ml INTEGER,                -- hydration: the suggested cup
    local_date TEXT NOT NULL,            -- the reminder day (`YYYY-MM-DD`, profile's zone)
    subject_id TEXT,                     -- bill: the bill id; campaign: the campaign id
    sent_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- The scheduler's claim: pending rows by due time.
CREATE INDEX reminders_due ON reminders (due_at) WHERE state = 'pending';
-- At most one pending hydration reminder per user (the recompute replaces it).
CREATE UNIQUE INDEX reminders_next_hydration ON reminders (user_id) WHERE kind = 'hydration' AND state = 'pending';
-- A user's history, newest first.
CREATE INDEX reminders_history ON reminders (user_id, due_at DESC);

-- The profile's `reminders` (spec §9): the JSON of `ReminderSettings.json`; `{}` reads as the defaults.
ALTER TABLE users ADD COLUMN reminders TEXT NOT NULL DEFAULT '{}';
