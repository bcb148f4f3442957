-- Suplash Sync, schema v13: smart reminders by subject (docs/reminders.md, "Bill reminders").
-- A bill's reminders (and the reminder a snooze replaced) are found by (user, subject) without
-- walking the user's whole reminder history: every bill write reads them.
CREATE INDEX reminders_subject ON reminders (user_id, subject_id) WHERE subject_id IS NOT NULL;
