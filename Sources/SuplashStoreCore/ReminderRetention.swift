import SuplashDomain
import SuplashSQL

/// The reminder history's retention (docs/reminders.md, "History retention"), for both engines:
/// ended hydration and bill reminders due before a cut-off are deleted, oldest first, a batch per
/// transaction, through `reminders_ended`. Pending reminders and campaign reminders (a campaign's
/// counts count its rows) are kept. On PostgreSQL the batch is taken `FOR UPDATE SKIP LOCKED`,
/// so two instances purging at once delete different rows.
extension ReminderRepository where Self: SQLStore {
    public func purgeReminderHistory(dueBefore: Int64, limit: Int) throws -> Int {
        try transaction { tx in
            try tx.execute(ReminderRetentionSQL.purge, [.integer(dueBefore), .integer(Int64(max(1, limit)))])
        }
    }
}

/// The retention's statement (public for the query-plan tests).
public enum ReminderRetentionSQL {
    /// ?1 cut-off (ms), ?2 batch size. The inner WHERE repeats the partial index's predicate.
    public static let purge = SQLText { d in
        """
        DELETE FROM reminders WHERE id IN (
            SELECT id FROM reminders WHERE state <> 'pending' AND kind <> 'campaign' AND due_at < ?1
            ORDER BY due_at LIMIT ?2 \(d.forUpdate(skipLocked: true)))
        """
    }
}
