-- Suplash Sync, schema v19: the recompute's history read (docs/reminders.md, "The recompute").
-- `ReminderSQL.planHistory` asks for the pending hydration reminder and the newest sent, not
-- cancelled, ones; through `reminders_history` it stepped over every cancelled row first — and a
-- user without an alert token (notifications not allowed) has only cancelled rows, one per
-- reminder that came due, up to `reminders.historyDays` of them, read again on every water
-- write. This index holds just the rows the read returns, in its order.
CREATE INDEX reminders_plan ON reminders (user_id, due_at DESC, id DESC)
    WHERE kind = 'hydration' AND (state = 'pending' OR (sent_at IS NOT NULL AND state <> 'cancelled'));

