-- Suplash Sync, PostgreSQL schema v13 (mirrors Migrations/sqlite/0013_reminder_campaigns.sql): smart
-- reminders by subject (docs/reminders.md, "Bill reminders"). A bill's reminders (and the reminder a
-- snooze replaced) are found by (user, subject) without walking the user's whole reminder history:
-- every bill write reads them.
CREATE INDEX reminders_subject ON reminders (user_id, subject_id) WHERE subject_id IS NOT NULL;

-- Admin campaigns (spec §8 `POST /v1/admin/notifications`): one row per campaign; the scheduler
-- reaches its users in batches by id (`expanded_after`), writing one `campaign` reminder per user
-- with reminders on, due at the segment's local time (docs/reminders.md, "Campaigns").
CREATE TABLE campaigns (
    id TEXT COLLATE "C" PRIMARY KEY,
    segment TEXT COLLATE "C" NOT NULL,               -- morning | noon | evening | all
    texts TEXT NOT NULL,                             -- JSON object: language code -> text
    send_at TEXT COLLATE "C",                        -- the RFC 3339 text given, or NULL
    created_at BIGINT NOT NULL,
    expanded_after TEXT COLLATE "C" NOT NULL DEFAULT '', -- the last user id reached so far
    expanded INTEGER NOT NULL DEFAULT 0              -- 1 once every user was reached
);
CREATE INDEX campaigns_expanding ON campaigns (created_at) WHERE expanded = 0;
-- A campaign's reminders, for its counts.
CREATE INDEX reminders_campaign ON reminders (subject_id, state) WHERE kind = 'campaign';
