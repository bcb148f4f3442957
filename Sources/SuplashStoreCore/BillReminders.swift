import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Bill-due reminders (docs/reminders.md, "Bill reminders"): each unpaid bill has at most one
/// pending `bill` row in `reminders` (`subject_id` = the bill id), recomputed by
/// `BillReminderSchedule.next` inside every write of the bill (REST create / revise / delete,
/// sync pushes), when the profile's reminder settings, zone, wake or sleep time change, and after the scheduler
/// sent the bill's previous one. The caller holds the user's lock. With reminders or bill
/// reminders off nothing is read (turning them off cancels the pending rows,
/// `ReminderPlanner.profileChanged`).
public enum BillReminders {
    /// Recomputes `billID`'s next reminder after a write of it: one read (its reminders,
    /// `reminders_subject`), one queued write.
    /// - Parameters:
    ///   - bill: the bill's content as the write leaves it; `deleted` for a tombstone.
    ///   - previous: its content before a revision (nil for a create, a delete, a send).
    ///   - now: ms since the epoch.
    /// - Throws: the engine's error.
    public static func billChanged(
        _ tx: some StoreTransaction, userID: String, profile: UserProfile, billID: String, bill: BillContent,
        previous: BillContent? = nil, deleted: Bool, now: Int64
    ) throws {
        guard profile.reminders.enabled, profile.reminders.billReminders else { return }
        let collapseID = DispatchSQL.billCollapseID(billID)
        // Paid or deleted: an alert for it still queued (APNs backing off) is taken back.
        if deleted || bill.paidAt != nil {
            try tx.enqueue(BillReminderSQL.dropQueuedAlert, [.text(userID), .text(collapseID)])
        }
        let rows = try tx.query(BillReminderSQL.ofBill, [.text(userID), .text(billID)])
        if !deleted, let previous,
            try resendWithNewText(tx, userID: userID, profile: profile, billID: billID, bill: bill, previous: previous, rows: rows, now: now)
        {
            return
        }
        try save(tx, userID: userID, profile: profile, billID: billID, bill: bill, deleted: deleted, rows: rows, now: now)
    }

    /// Whether a revision changes what the bill's alert says: provider, amount, currency, due date.
    static func alertTextChanged(_ previous: BillContent, _ bill: BillContent) -> Bool {
        previous.provider != bill.provider || previous.amountMinor != bill.amountMinor || previous.currency != bill.currency
            || previous.dueDate != bill.dueDate
    }

    /// A revision of an unpaid bill whose alert's text changed while the alert is still queued
    /// and not yet handed to the sender: the alert is taken back, and its reminder sent again
    /// with the new text when its day is still a reminder day with a slot left (the row back to
    /// pending, due now; the bill's other pending row cancelled, planned again after the send).
    /// Otherwise that day's alert would be lost, its reminder `sent`. One being sent is left to
    /// go (taking it back could not stop it: two alerts).
    /// - Parameter rows: the bill's reminder rows (`BillReminderSQL.columns`).
    /// - Returns: true when the reminder goes again (the plan is then left as it is).
    /// - Throws: the engine's error.
    static func resendWithNewText(
        _ tx: some StoreTransaction, userID: String, profile: UserProfile, billID: String, bill: BillContent,
        previous: BillContent, rows: [some SQLRowValues], now: Int64
    ) throws -> Bool {
        let collapseID = DispatchSQL.billCollapseID(billID)
        let sent = rows.filter { $0[1].text == "sent" && ($0[2].int64 ?? 0) > now - DispatchSQL.lifetimeMs }
            .max { ($0[2].int64 ?? 0) < ($1[2].int64 ?? 0) }
        guard bill.paidAt == nil, alertTextChanged(previous, bill), let sent, let sentAt = sent[2].int64,
            // A copy of it already with the sender or delivered (another device): sent again, it
            // would arrive twice there. Left as it is.
            try tx.queryOne(BillReminderSQL.copyOnItsWay, [.text(userID), .text(collapseID), .integer(sentAt)]) == nil,
            !(try tx.query(BillReminderSQL.takeBackQueuedAlert, [.text(userID), .text(collapseID)]).isEmpty)
        else { return false }
        guard let day = sent[5].text.flatMap(LocalDate.init(parsing:)), BillReminderSchedule.isReminderDay(day, of: bill),
            BillReminderSchedule.dispatchInstant(day: day, hours: BillAlertHours(profile: profile), now: now) != nil
        else { return false }
        try tx.enqueue(BillReminderSQL.sendAgain, [sent[0], .integer(now)])
        for row in rows where row[1].text == "pending" { try tx.enqueue(ReminderSQL.cancel, [row[0], .integer(now)]) }
        return true
    }

    /// Recomputes every unpaid live bill's next reminder (a profile or sync write changed the
    /// settings, the zone or bills): reads the bills and their reminders in one round trip.
    /// - Throws: the engine's error.
    /// - Parameter revised: the bills a sync push revised, with their content before it (a
    ///   queued alert whose text changed is sent again, `resendWithNewText`).
    public static func replanAll(
        _ tx: some StoreTransaction, userID: String, profile: UserProfile, revised: [String: BillContent] = [:], now: Int64
    ) throws {
        guard profile.reminders.enabled, profile.reminders.billReminders else {
            try tx.enqueue(BillReminderSQL.cancelAll, [.text(userID), .integer(now)])
            try tx.enqueue(BillReminderSQL.dropQueuedAlerts, [.text(userID)])
            return
        }
        let rows = try tx.pipeline([
            SQLStatement(BillReminderSQL.unpaid, [.text(userID)]), SQLStatement(BillReminderSQL.ofUser, [.text(userID)]),
        ])
        let bills = rows[0].map { StoreRows.bill($0) }
        for bill in bills {
            let mine = rows[1].filter { $0[4].text == bill.id }
            if let previous = revised[bill.id],
                try resendWithNewText(
                    tx, userID: userID, profile: profile, billID: bill.id, bill: bill.content, previous: previous, rows: mine,
                    now: now)
            {
                continue
            }
            try save(tx, userID: userID, profile: profile, billID: bill.id, bill: bill.content, deleted: false, rows: mine, now: now)
        }
        // Pending reminders of bills that are no longer unpaid and live, and the alerts of such
        // bills sent within an alert's lifetime (perhaps still queued).
        let live = Set(bills.map(\.id))
        var dropped: Set<String> = []
        for row in rows[1] where !live.contains(row[4].text ?? "") {
            let billID = row[4].text ?? ""
            if row[1].text == "pending" { try tx.enqueue(ReminderSQL.cancel, [row[0], .integer(now)]) }
            if let sentAt = row[2].int64, sentAt > now - DispatchSQL.lifetimeMs, dropped.insert(billID).inserted {
                try tx.enqueue(BillReminderSQL.dropQueuedAlert, [.text(userID), .text(DispatchSQL.billCollapseID(billID))])
            }
        }
    }

    /// The decision over the bill's reminder rows (`BillReminderSQL.columns`). A pending row
    /// under way keeps its day (`BillReminderSchedule.underWayInstant`), unless `movingDue`
    /// (the scheduler found no slot left on its day).
    static func save(
        _ tx: some StoreTransaction, userID: String, profile: UserProfile, billID: String, bill: BillContent,
        deleted: Bool, rows: [some SQLRowValues], movingDue: Bool = false, now: Int64
    ) throws {
        let pending = rows.first { $0[1].text == "pending" }
        let hours = BillAlertHours(profile: profile)
        if !movingDue, !deleted, bill.paidAt == nil, let pending, let stored = pending[3].int64,
            let day = pending[5].text.flatMap(LocalDate.init(parsing:)),
            let keep = BillReminderSchedule.underWayInstant(
                day: day, storedDueAt: stored, bill: bill, hours: hours, waitMs: DispatchSQL.collisionDelayMs, now: now)
        {
            if keep != stored {
                try tx.enqueue(BillReminderSQL.move, [pending[0], .integer(keep), .text(day.description), .integer(now)])
            }
            return
        }
        let plan = BillReminderSchedule.next(
            billID: billID, bill: bill, deleted: deleted, hours: hours, sentAt: rows.compactMap { $0[2].int64 }, now: now)
        switch (plan, pending) {
        case (nil, nil):
            return
        case (nil, let pending?):
            try tx.enqueue(ReminderSQL.cancel, [pending[0], .integer(now)])
        case (let plan?, let pending?):
            guard pending[3].int64 != plan.dueAt else { return }
            try tx.enqueue(
                BillReminderSQL.move, [pending[0], .integer(plan.dueAt), .text(plan.localDate.description), .integer(now)])
        case (let plan?, nil):
            try tx.enqueue(
                BillReminderSQL.insert,
                [
                    .text(ReminderPlanner.newID()), .text(userID), .integer(plan.dueAt), .text(plan.localDate.description),
                    .text(billID), .integer(now),
                ])
        }
    }
}

enum BillReminderSQL {
    static let columns = "id, state, sent_at, due_at, subject_id, local_date"
    /// One bill's reminders (`reminders_subject`); ?1 user, ?2 bill id.
    static let ofBill = SQLText(
        "SELECT \(columns) FROM reminders WHERE user_id = ?1 AND subject_id = ?2 AND kind = 'bill'")
    /// Every bill reminder of the user (`reminders_subject`); ?1 user.
    static let ofUser = SQLText(
        "SELECT \(columns) FROM reminders WHERE user_id = ?1 AND subject_id IS NOT NULL AND kind = 'bill'")
    /// The user's live unpaid bills.
    static let unpaid = SQLText(
        "SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ?1 AND deleted = 0 AND paid_at IS NULL")
    /// ?1 id, ?2 user, ?3 due, ?4 local date, ?5 bill id, ?6 now.
    static let insert = SQLText(
        """
        INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id, created_at, updated_at)
        VALUES (?1, ?2, 'bill', ?3, 'pending', NULL, ?4, ?5, ?6, ?6)
        """)
    /// ?1 id, ?2 due, ?3 local date, ?4 now.
    static let move = SQLText(
        "UPDATE reminders SET due_at = ?2, local_date = ?3, updated_at = ?4 WHERE id = ?1 AND state = 'pending'")
    /// The user's queued bill alert with collapse id ?2 (`DispatchSQL.billCollapseID`); ?1 user.
    static let dropQueuedAlert = SQLText(
        "DELETE FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert' AND collapse_id = ?2 AND \(PushSQL.pending)")
    /// `dropQueuedAlert` for alerts the sender has not claimed (`state = 'pending'`, not
    /// `sending`), answering a row per alert taken back; ?1 user, ?2 collapse id.
    static let takeBackQueuedAlert = SQLText(
        """
        DELETE FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert' AND collapse_id = ?2 AND \(PushSQL.pending)
            AND state = 'pending'
        RETURNING id
        """)
    /// A copy of the alert with collapse id ?2 claimed by the sender, or delivered since ?3 (the
    /// reminder's `sent_at`); ?1 user.
    static let copyOnItsWay = SQLText(
        """
        SELECT 1 FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert' AND collapse_id = ?2
            AND (state = 'sending' OR delivered_at >= ?3)
        LIMIT 1
        """)
    /// A sent bill reminder whose queued alert was taken back, pending again and due now; ?1 id,
    /// ?2 now.
    static let sendAgain = SQLText(
        "UPDATE reminders SET state = 'pending', sent_at = NULL, due_at = ?2, updated_at = ?2 WHERE id = ?1 AND state = 'sent'")
    /// Every queued bill alert of the user; ?1 user.
    static let dropQueuedAlerts = SQLText(
        """
        DELETE FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert' AND collapse_id LIKE '\(DispatchSQL.billCollapsePrefix)%'
            AND \(PushSQL.pending)
        """)
    /// ?1 user, ?2 now.
    static let cancelAll = SQLText(
        "UPDATE reminders SET state = 'cancelled', updated_at = ?2 WHERE user_id = ?1 AND kind = 'bill' AND state = 'pending'")
}

extension BillAlertHours {
    /// The hours of `profile`'s user: reminder settings, awake period, zone.
    init(profile: UserProfile) {
        self.init(
            settings: profile.reminders, wake: ClockTime(parsing: profile.wakeTime), sleep: ClockTime(parsing: profile.sleepTime),
            clock: ZoneClocks.shared.clock(profile.timezone))
    }
}
