-- Suplash Sync, schema v17: the reads of the reminder recompute (docs/reminders.md, "The
-- recompute") in index order: it runs in the transaction of every entry write of a user with
-- reminders on.

-- A user's history newest first with the id as the tie-break (`ReminderSQL.history`): the index
-- gives the whole order, no sort of the user's rows by id.
DROP INDEX reminders_history;
CREATE INDEX reminders_history ON reminders (user_id, due_at DESC, id DESC);

-- The hourly history (`ReminderSQL.hourlyHistory`, GROUP BY hour) reads the user's buckets in
-- hour order with their amounts, as on SQLite.
CREATE INDEX drinking_hours_by_hour ON drinking_hours (user_id, hour, local_date) INCLUDE (amount_ml);
