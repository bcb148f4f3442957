-- Suplash Sync, schema v17: the reads of the reminder recompute (docs/reminders.md, "The
-- recompute") in index order, with no sort: it runs in the transaction of every entry write of
-- a user with reminders on.

-- A user's history newest first with the id as the tie-break (`ReminderSQL.history`): the index
-- gives the whole order (before, SQLite sorted the user's rows by id in a temporary B-tree).
DROP INDEX reminders_history;
CREATE INDEX reminders_history ON reminders (user_id, due_at DESC, id DESC);

-- The per-hour totals without a rowid (one B-tree per row write instead of two), and an index by
-- hour that holds the amounts: the hourly history (`ReminderSQL.hourlyHistory`, GROUP BY hour)
-- walks it in hour order instead of grouping in a temporary B-tree; the reminder day's buckets
-- keep reading the primary key.
CREATE TABLE drinking_hours_new (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    local_date TEXT NOT NULL,
    hour INTEGER NOT NULL,
    amount_ml INTEGER NOT NULL,
    PRIMARY KEY (user_id, local_date, hour)
) WITHOUT ROWID;
INSERT INTO drinking_hours_new (user_id, local_date, hour, amount_ml)
    SELECT user_id, local_date, hour, amount_ml FROM drinking_hours;
DROP TABLE drinking_hours;
ALTER TABLE drinking_hours_new RENAME TO drinking_hours;
CREATE INDEX drinking_hours_by_hour ON drinking_hours (user_id, hour, local_date, amount_ml);
