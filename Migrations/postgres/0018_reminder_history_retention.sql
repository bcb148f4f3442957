-- Suplash Sync, schema v18: the reminder history's retention (docs/reminders.md, "History
-- retention"). The scheduler deletes ended hydration and bill reminders (any state but pending)
-- due more than `reminders.historyDays` ago, oldest first in batches, through this index;
-- campaign reminders stay (a campaign's counts count its rows), and so do pending ones.
CREATE INDEX reminders_ended ON reminders (due_at) WHERE state <> 'pending' AND kind <> 'campaign';
