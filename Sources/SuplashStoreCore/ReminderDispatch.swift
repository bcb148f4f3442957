import SuplashDomain
import SuplashJSON
import SuplashSQL
import SuplashStoreRows

/// The reminder scheduler's step (docs/reminders.md, "Scheduler"), for both engines: one
/// transaction claims due pending rows (`reminders_due`, `FOR UPDATE SKIP LOCKED` on
/// PostgreSQL), takes their users' locks without waiting (`SKIP LOCKED`: a user in the middle of
/// a write is left for the next step, so the scheduler never waits on a writer that waits on a
/// claimed row), reads what the pushes need in one round trip, queues the push outbox rows and
/// state changes with the commit, and plans each user's next reminder (`ReminderPlanner`, one
/// round trip per user).
extension ReminderRepository where Self: SQLStore {
    public func dispatchDueReminders(now: Int64, limit: Int, messages: MessageCatalogue) throws -> ReminderDispatchReport {
        try transaction { tx in
            var report = ReminderDispatchReport()
            let claimed = try tx.query(DispatchSQL.claim, [.integer(now), .integer(Int64(limit))]).map {
                (user: $0[8].text ?? "", reminder: ReminderSQL.stored($0))
            }
            report.claimed = claimed.count
            guard !claimed.isEmpty else { return report }
            var users: [String] = []
            for c in claimed where !users.contains(c.user) { users.append(c.user) }
            var reads: [SQLStatement] = []
            for user in users {
                reads.append(SQLStatement(DispatchSQL.lockUser, [.text(user)]))
                reads.append(SQLStatement(DispatchSQL.alertTargets, [.text(user), .integer(now)]))
                reads.append(SQLStatement(ReminderSQL.lastIntakeWrite, [.text(user), .integer(now - 3 * 86_400_000)]))
            }
            for c in claimed {
                reads.append(SQLStatement(DispatchSQL.dayTotal, [.text(c.user), .text(c.reminder.localDate)]))
                reads.append(SQLStatement(DispatchSQL.dayContext, [.text(c.user), .text(c.reminder.localDate)]))
                reads.append(SQLStatement(DispatchSQL.bill, [.text(c.user), .text(c.reminder.subjectID ?? "")]))
                reads.append(SQLStatement(CampaignSQL.texts, [.text(c.reminder.kind == .campaign ? c.reminder.subjectID ?? "" : "")]))
            }
            let rows = try tx.pipeline(reads)
            for (u, user) in users.enumerated() {
                guard let profile = rows[3 * u].first.map({ StoreRows.user($0).profile }) else {
                    report.skipped += claimed.filter { $0.user == user }.count
                    continue
                }
                // Bills and campaigns first. A device holds one pending alert (the outbox row is
                // replaced, not added), so every alert after the first in a step — a second bill,
                // a campaign, the hydration reminder — waits `collisionDelayMs` instead of
                // replacing it.
                let mine = claimed.enumerated().filter { $0.element.user == user }
                    .sorted {
                        ($0.element.reminder.kind == .hydration ? 1 : 0, $0.offset) < ($1.element.reminder.kind == .hydration ? 1 : 0, $1.offset)
                    }
                guard profile.reminders.enabled else {
                    try ReminderPlanner.turnedOff(tx, userID: user, now: now)
                    continue
                }
                let targets = DispatchSQL.targets(rows[3 * u + 1])
                var queued: [String: String] = [:]
                for row in rows[3 * u + 1] {
                    if let device = row[0].text, let collapseID = row[2].text { queued[device] = collapseID }
                }
                let lastIntake = rows[3 * u + 2].first?[0].int64
                var replan = false
                var sentBills: [Bill] = []
                var alerted = false
                // Whether `r` waits `collisionDelayMs`: another alert went to the user in this step,
                // or a device still holds a bill or campaign alert of another subject.
                func waits(_ r: StoredReminder) -> Bool {
                    alerted || DispatchSQL.wouldReplaceQueuedAlert(r, targets: targets, queued: queued)
                }
                for (i, c) in mine {
                    let r = c.reminder
                    let base = 3 * users.count + 4 * i
                    if r.isMark {
                        try tx.enqueue(ReminderSQL.dropMark, [.text(r.id)])
                        replan = true
                        continue
                    }
                    let alert: RenderedAlert
                    var extra: [(String, JSONValue)] = []
                    switch r.kind {
                    case .hydration:
                        // Nowhere to send it (no device holds an alert token): not a sent
                        // reminder — no ignored streak, no spacing, no metric. The next one is
                        // planned when an alert token is registered or the user writes again.
                        guard !targets.isEmpty else {
                            try tx.enqueue(ReminderSQL.cancel, [.text(r.id), .integer(now)])
                            continue
                        }
                        // Due longer ago than an alert lives (every instance was down, or the
                        // scheduler off): "time for water" hours late — at night, with that day's
                        // total — helps nobody. Cancelled, not sent; the next one is planned from now.
                        guard now - r.dueAt <= DispatchSQL.lifetimeMs else {
                            try tx.enqueue(ReminderSQL.cancel, [.text(r.id), .integer(now)])
                            report.expired += 1
                            replan = true
                            continue
                        }
                        guard !waits(r) else {
                            try tx.enqueue(DispatchSQL.postpone, [.text(r.id), .integer(now + DispatchSQL.collisionDelayMs)])
                            continue
                        }
                        let logged = Int(rows[base].first?[0].int64 ?? 0)
                        let context = rows[base + 1].first.map {
                            DayContextContent(maxTemperatureC: $0[0].double, activeMinutes: $0[1].int64.map { Int($0) })
                        }
                        let goal = HydrationRules.dayGoalMl(baseGoalMl: HydrationRules.baseGoalMl(profile), context: context)
                        let suggested = r.suggestedMl ?? profile.cupSizesMl.first ?? 250
                        alert = messages.hydrationAlert(locale: profile.locale, loggedMl: logged, goalMl: goal, suggestedMl: suggested)
                        extra.append(("suggestedAmountMl", .number(JSONNumber(Int64(suggested)))))
                        let ignored = lastIntake.map { [SQLValue.integer($0)] } ?? [.integer(-1)]
                        report.ignored += try tx.execute(DispatchSQL.markIgnored, [.text(user), .text(r.id), .integer(now)] + ignored)
                        replan = true
                    case .campaign:
                        guard let campaign = rows[base + 3].first, let text = campaign[0].text,
                            case .object(let members)? = try? JSONParser.parse(Array(text.utf8))
                        else {
                            try tx.enqueue(ReminderSQL.cancel, [.text(r.id), .integer(now)])
                            continue
                        }
                        // Only inside its segment and outside quiet hours: a later instant there
                        // moves it; none left cancels it (the campaign's `failed` count).
                        if let wake = ClockTime(parsing: profile.wakeTime), let sleep = ClockTime(parsing: profile.sleepTime) {
                            let sendAt = CampaignSchedule.dispatchInstant(
                                segment: campaign[1].text.flatMap(CampaignSegment.init(rawValue:)) ?? .all,
                                hasSendAt: campaign[2].text != nil, dueAt: r.dueAt, wake: wake, sleep: sleep,
                                quiet: profile.reminders.quietHours, clock: ZoneClocks.shared.clock(profile.timezone),
                                lifetimeMs: DispatchSQL.lifetimeMs, now: now)
                            guard sendAt == now else {
                                if let sendAt {
                                    try tx.enqueue(DispatchSQL.postpone, [.text(r.id), .integer(sendAt)])
                                } else {
                                    try tx.enqueue(ReminderSQL.cancel, [.text(r.id), .integer(now)])
                                    report.expired += 1
                                }
                                continue
                            }
                        }
                        guard !waits(r) else {
                            try tx.enqueue(DispatchSQL.postpone, [.text(r.id), .integer(now + DispatchSQL.collisionDelayMs)])
                            continue
                        }
                        var texts: [String: String] = [:]
                        for (language, value) in members { if case .string(let s) = value { texts[language] = s } }
                        alert = messages.campaignAlert(locale: profile.locale, texts: texts)
                        extra.append(("campaignId", .string(r.subjectID ?? "")))
                    case .bill:
                        // Cancelled when the bill is gone, paid, or bill reminders are off.
                        guard let bill = rows[base + 2].first.map({ StoreRows.bill($0) }), r.kind == .bill,
                            profile.reminders.billReminders, let day = LocalDate(parsing: r.localDate)
                        else {
                            try tx.enqueue(ReminderSQL.cancel, [.text(r.id), .integer(now)])
                            continue
                        }
                        // Only on its day, outside quiet hours, while the user is awake: found
                        // late, or after waiting behind another alert, it goes at the day's next
                        // slot; with none left the still pending row moves to the bill's next
                        // reminder day, or is cancelled.
                        let hours = BillAlertHours(profile: profile)
                        let sendAt = BillReminderSchedule.dispatchInstant(day: day, hours: hours, now: now)
                        guard sendAt == now else {
                            if let sendAt {
                                try tx.enqueue(BillReminderSQL.move, [.text(r.id), .integer(sendAt), .text(r.localDate), .integer(now)])
                            } else {
                                try BillReminders.save(
                                    tx, userID: user, profile: profile, billID: bill.id, bill: bill.content, deleted: false,
                                    rows: try tx.query(BillReminderSQL.ofBill, [.text(user), .text(bill.id)]), movingDue: true,
                                    now: now)
                                report.expired += 1
                            }
                            continue
                        }
                        guard !waits(r) else {
                            try tx.enqueue(DispatchSQL.postpone, [.text(r.id), .integer(now + DispatchSQL.collisionDelayMs)])
                            continue
                        }
                        alert = messages.billAlert(
                            locale: profile.locale, provider: bill.content.provider, amountMinor: bill.content.amountMinor,
                            currency: bill.content.currency, daysBeforeDue: bill.content.dueDate.dayNumber - day.dayNumber)
                        extra.append(("billId", .string(bill.id)))
                        sentBills.append(bill)
                    }
                    let payload = DispatchSQL.payload(alert, reminderID: r.id, kind: r.kind, extra: extra)
                    for device in targets {
                        try tx.enqueue(
                            DispatchSQL.insertPush,
                            [
                                .text(PushSQL.newID()), .text(user), .text(device), .text(payload),
                                .text(DispatchSQL.collapseID(r)),
                                .integer(now),
                                .integer(max(r.dueAt, now) + DispatchSQL.lifetimeMs),
                            ])
                    }
                    try tx.enqueue(DispatchSQL.markSent, [.text(r.id), .integer(now)])
                    report.sent += 1
                    alerted = alerted || !targets.isEmpty
                }
                for bill in sentBills {
                    try BillReminders.billChanged(
                        tx, userID: user, profile: profile, billID: bill.id, bill: bill.content, deleted: false, now: now)
                }
                if replan && !targets.isEmpty {
                    if try ReminderPlanner.replan(tx, userID: user, profile: profile, intakeWrittenAt: nil, now: now) {
                        report.scheduled += 1
                    }
                }
            }
            return report
        }
    }
}

enum DispatchSQL {
    /// `apns-expiration`: 30 minutes after the due time (or after a late send).
    static let lifetimeMs: Int64 = 30 * 60_000
    /// How long an alert waits behind another alert to the same user in the same step.
    static let collisionDelayMs: Int64 = 5 * 60_000

    /// The alert's `apns-collapse-id`: one per user and local day for hydration reminders (a newer
    /// one replaces the older on the lock screen), one per bill (its reminders replace each other,
    /// not the day's hydration reminder), one per campaign.
    static func collapseID(_ r: StoredReminder) -> String {
        switch r.kind {
        case .hydration: "suplash-reminder-\(r.localDate)"
        case .bill: billCollapseID(r.subjectID ?? "")
        case .campaign: campaignCollapsePrefix + (r.subjectID ?? "")
        }
    }
    /// The collapse id of a bill's alerts: `billCollapsePrefix` + the bill id.
    static func billCollapseID(_ billID: String) -> String { billCollapsePrefix + billID }
    static let billCollapsePrefix = "suplash-bill-"
    static let campaignCollapsePrefix = "suplash-campaign-"
    /// ?1 id, ?2 new due time.
    static let postpone = SQLText("UPDATE reminders SET due_at = ?2 WHERE id = ?1 AND state = 'pending'")

    /// Due pending reminders, oldest due first (`reminders_due`); ?1 now, ?2 limit. Columns as
    /// `ReminderSQL.columns`, then `user_id`.
    static let claim = SQLText { d in
        """
        SELECT \(ReminderSQL.columns), user_id FROM reminders
        WHERE state = 'pending' AND due_at <= ?1 ORDER BY due_at LIMIT ?2 \(d.forUpdate(skipLocked: true))
        """
    }
    /// The user's row, locked unless another transaction holds it (then no row).
    static let lockUser = SQLText { d in
        "SELECT \(StoreRows.userColumns) FROM users WHERE id = ?1 \(d == .postgres ? "FOR NO KEY UPDATE SKIP LOCKED" : "")"
    }
    /// The user's devices holding an alert token, with their platform and the collapse id of
    /// the alert still queued for them and not expired (`PushSQL.pending`; at most one,
    /// `push_outbox_pending`), or NULL; ?1 user, ?2 now. An expired one is never sent (the sender
    /// drops it when it claims it) and must not hold later alerts back.
    static let alertTargets = SQLText(
        """
        SELECT t.device_id, d.platform, o.collapse_id
        FROM device_tokens t JOIN devices d ON d.user_id = t.user_id AND d.id = t.device_id
        LEFT JOIN push_outbox o ON o.user_id = t.user_id AND o.device_id = t.device_id AND o.push_type = 'alert'
            AND o.delivered_at IS NULL AND o.failed_at IS NULL AND o.expires_at > ?2
        WHERE t.user_id = ?1 AND t.push_type = 'alert' ORDER BY t.device_id
        """)

    /// Whether sending `r` now would overwrite a queued bill or campaign alert of another
    /// subject on one of `targets` (the device's one pending alert is replaced: a bill alert
    /// held back by APNs would be lost, its reminder already `sent`). `queued`: device id →
    /// collapse id, from `alertTargets`.
    static func wouldReplaceQueuedAlert(_ r: StoredReminder, targets: [String], queued: [String: String]) -> Bool {
        let own = collapseID(r)
        return targets.contains { device in
            guard let other = queued[device], other != own else { return false }
            return other.hasPrefix(billCollapsePrefix) || other.hasPrefix(campaignCollapsePrefix)
        }
    }
    static let dayTotal = SQLText("SELECT total_ml FROM daily_totals WHERE user_id = ?1 AND local_date = ?2")
    static let dayContext = SQLText("SELECT max_temperature_c, active_minutes FROM days WHERE user_id = ?1 AND local_date = ?2")
    /// A live unpaid bill (`StoreRows.billColumns`).
    static let bill = SQLText(
        "SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ?1 AND id = ?2 AND deleted = 0 AND paid_at IS NULL")
    /// An alert row; ?1 id, ?2 user, ?3 device, ?4 payload,
    /// ?5 collapse id, ?6 now, ?7 expiry. A pending alert of the device is replaced.
    static let insertPush = SQLText(
        """
        INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
            attempts, next_attempt_at, state, created_at)
        VALUES (?1, ?2, ?3, 'alert', ?4, ?5, ?6, ?7, 0, ?6, 'pending', ?6)
        ON CONFLICT (user_id, device_id, push_type) WHERE \(PushSQL.pending)
        DO UPDATE SET payload = excluded.payload, collapse_id = excluded.collapse_id, expires_at = excluded.expires_at
        """)
    /// ?1 id, ?2 now.
    static let markSent = SQLText("UPDATE reminders SET state = 'sent', sent_at = ?2, updated_at = ?2 WHERE id = ?1")
    /// The user's earlier sent hydration reminders without an answer and with no water written
    /// since they were sent; ?1 user, ?2 the one being sent, ?3 now, ?4 the latest intake write
    /// (−1: none).
    static let markIgnored = SQLText(
        """
        UPDATE reminders SET state = 'ignored', updated_at = ?3
        WHERE user_id = ?1 AND kind = 'hydration' AND state = 'sent' AND id <> ?2 AND sent_at > ?4
        """)

    /// Phones (iOS) with an alert token; the watch only when there is none (iPhone alerts reach
    /// a paired watch); other devices (iPad, Mac) only when there is neither.
    static func targets(_ rows: [some SQLRowValues]) -> [String] {
        let devices = rows.map { (id: $0[0].text ?? "", platform: $0[1].text.flatMap(DevicePlatform.init(rawValue:))) }
        for wanted in [[DevicePlatform.ios], [.watchos], [.ipados, .macos]] {
            let found = devices.filter { $0.platform.map(wanted.contains) ?? false }.map(\.id)
            if !found.isEmpty { return found }
        }
        return []
    }

    /// The alert payload: `aps.alert` {title, body}, `aps.category` `SUPLASH_REMINDER`, the
    /// default sound, then `reminderId`, `kind` and `extra`.
    static func payload(_ alert: RenderedAlert, reminderID: String, kind: ReminderKind, extra: [(String, JSONValue)]) -> String {
        JSONValue.object(
            [
                (
                    "aps",
                    .object([
                        ("alert", .object([("title", .string(alert.title)), ("body", .string(alert.body))])),
                        ("sound", "default"), ("category", "SUPLASH_REMINDER"),
                    ])
                ),
                ("reminderId", .string(reminderID)), ("kind", .string(kind.rawValue)),
            ] + extra
        ).serializedString()
    }
}
