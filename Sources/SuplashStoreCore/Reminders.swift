import Foundation
import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// The next hydration reminder of a user (spec §9 "Reminders"; docs/reminders.md, "Storage"),
/// kept in the one pending hydration row of `reminders` (`reminders_next_hydration`) and
/// recomputed inside the transaction of every write that changes the user's day: entry writes
/// (through `EntryBookkeeping.entriesChanged`), day contexts (`daysChanged`), profile writes
/// (`profileChanged`) and sync pushes (once per push, `SyncPush`). The caller holds the user's
/// lock. `HydrationSchedule.plan` decides; this enum gathers its inputs with one round trip of
/// bounded reads and `enqueue`s the write (no round trip of its own on PostgreSQL). A user with
/// reminders off costs nothing on entry writes.
///
/// A pending hydration row with `suggested_ml` NULL is a **re-plan mark**, not a reminder: the
/// plan had none (goal met, window closed, …) and wants to be asked again at `recheckAt` (the
/// window's end); the scheduler claims it like a reminder, sends nothing and plans again. It
/// is not shown by `GET …/reminders`. A pending row with `subject_id` set is the reminder a
/// `:snooze` created (`subject_id` = the snoozed one): only an intake write replaces it
/// (`intakeWritten`).
public enum ReminderPlanner {
    /// How many of the user's hydration reminders the plan reads (`ReminderSQL.planHistory`):
    /// the pending one, and enough sent ones for everything `HydrationSchedule.plan` asks of them
    /// — today's count against `maxPerDay`, the latest for the minimum gap, and whether the newest
    /// `ignoredStreakForSlowdown` were ignored.
    @inlinable static func planHistoryLimit(_ settings: ReminderSettings) -> Int {
        settings.maxPerDay + HydrationSchedule.ignoredStreakForSlowdown + 1
    }

    /// Recomputes after a write that changed the user's day (entries, day contexts).
    /// - Parameters:
    ///   - profile: the user's profile as the transaction leaves it.
    ///   - intakeWritten: true when the write logged water (`intakeWritten(_:window:)`): the
    ///     write is the user's latest intake write (`lastIntakeWrittenAt` = `now`) and it
    ///     answers a snooze.
    ///   - now: ms since the epoch.
    /// - Throws: the engine's error.
    ///   - window: the profile's `WakingWindow.current(at: now)` when the caller has it
    ///     (`windowToPlan`).
    @inlinable public static func dayChanged<T: StoreTransaction>(
        _ tx: T, userID: String, profile: UserProfile, intakeWritten: Bool, now: Int64, window: WakingWindow? = nil,
        prefetched: (prefetch: Prefetch, rows: ArraySlice<[T.Connection.Row]>, deltas: [EntryDelta])? = nil
    ) throws {
        guard profile.reminders.enabled else { return }
        try replan(
            tx, userID: userID, profile: profile, intakeWrittenAt: intakeWritten ? now : nil, now: now, window: window,
            prefetched: prefetched)
    }

    /// The waking window an entry write's recompute works on (`WakingWindow.current(at: now)`,
    /// for `dayChanged(window:)`), or nil when the recompute is skipped: reminders are off, the
    /// wake or sleep time does not parse (the plan would do nothing), the write cannot change
    /// the plan because the reminder day's goal was met before the write and still is (the plan
    /// stays "goal met"; its re-plan mark is already stored), or every entry version of `deltas`
    /// was drunk before the hourly history's first day (`HourlyDrinking.firstKeptDay`): such a
    /// write changes none of the plan's reads — not the day's intake, not the hourly history,
    /// and it is no intake write (`intakeWritten(_:window:)`).
    public static func windowToPlan(
        profile: UserProfile, changes: [DayTotalChange], deltas: [EntryDelta], now: Int64
    ) -> WakingWindow? {
        guard profile.reminders.enabled else { return nil }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        guard reachesPlan(deltas, clock: clock, now: now),
            let window = window(wakeTime: profile.wakeTime, sleepTime: profile.sleepTime, clock: clock, now: now)
        else { return nil }
        if let change = changes.first(where: { $0.date == window.day }), change.before?.goalMet == true,
            change.after?.goalMet == true
        {
            return nil
        }
        return window
    }

    /// The waking window at `now` (`WakingWindow.current`) for wake and sleep times `HH:MM` in
    /// `clock`'s zone; nil when either does not parse (the plan then does nothing).
    @usableFromInline static func window(wakeTime: String, sleepTime: String, clock: ZoneClock, now: Int64) -> WakingWindow? {
        guard let wake = ClockTime(parsing: wakeTime), let sleep = ClockTime(parsing: sleepTime) else { return nil }
        return WakingWindow.current(at: now, wake: wake, sleep: sleep, clock: clock)
    }

    /// The reminder day whose water `instant` counts for (`WakingWindow.countEnd`): the previous
    /// local day while that day's awake period, running past midnight, has not ended — a snooze
    /// from 23:45 to 00:15, awake until 01:00, stays on the evening's day (its total, its collapse
    /// id) — else the instant's own local day (also when the times do not parse).
    static func reminderDay(of instant: Int64, wakeTime: String, sleepTime: String, clock: ZoneClock) -> LocalDate {
        let day = clock.localDate(of: instant)
        guard let wake = ClockTime(parsing: wakeTime), let sleep = ClockTime(parsing: sleepTime) else { return day }
        let previous = WakingWindow(day: day.adding(days: -1), wake: wake, sleep: sleep, clock: clock)
        return instant < previous.countEnd ? previous.day : day
    }

    /// True when an entry version of `deltas` was drunk on or after the hourly history's first
    /// day (`HourlyDrinking.firstKeptDay`, in `clock`'s zone): only such a write can change what
    /// the plan reads.
    public static func reachesPlan(_ deltas: [EntryDelta], clock: ZoneClock, now: Int64) -> Bool {
        let horizon = clock.startOfDay(HourlyDrinking.firstKeptDay(today: clock.localDate(of: now)))
        return deltas.contains { $0.loggedAt >= horizon }
    }

    /// True when `deltas` log water as the schedule counts it (the user's latest intake write:
    /// it ends an ignored streak and answers a snooze): a new entry (a version that appeared with
    /// no earlier version of the same id leaving — an edit is not one) drunk from two days before
    /// the reminder day's start on, as the scheduler's own re-plan finds the latest intake write
    /// (`ReminderSQL.lastIntakeWrite`, the latest `created_at`). A backdated entry of last month
    /// is no answer to today's reminders.
    public static func intakeWritten(_ deltas: [EntryDelta], window: WakingWindow) -> Bool {
        let from = intakeReadFrom(window)
        guard deltas.contains(where: { $0.count > 0 && $0.loggedAt >= from }) else { return false }
        let edited = Set(deltas.lazy.filter { $0.count < 0 }.compactMap(\.id))
        return deltas.contains { $0.count > 0 && $0.loggedAt >= from && !($0.id.map(edited.contains) ?? false) }
    }

    /// True when the recompute after an entry write of `deltas` that is no intake write (an edit,
    /// a delete) reads the user's latest intake write (`ReminderSQL.lastIntakeWrite`) over a range
    /// holding one of the write's versions: the written entry row must then be visible to the
    /// transaction's later reads — on PostgreSQL, `StoreTransaction.defersPositionedWrites` false
    /// (a deferred row is written by the commit, and the read would still find a deleted entry or
    /// an edited one's old version). Reminders off or times that do not parse: false.
    public static func readsIntakeOf(_ deltas: [EntryDelta], profile: UserProfile, now: Int64) -> Bool {
        guard profile.reminders.enabled else { return false }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        guard let window = window(wakeTime: profile.wakeTime, sleepTime: profile.sleepTime, clock: clock, now: now)
        else { return false }
        let from = intakeReadFrom(window)
        return deltas.contains { $0.loggedAt >= from }
    }

    /// The user's reminders are off: every pending reminder (bills' included) is cancelled, the
    /// re-plan marks dropped, and the alerts still queued in the push outbox (APNs backing off, a
    /// paused sender) deleted, so none arrives after the switch. Queued with the transaction.
    /// - Throws: the engine's error (SQLite).
    static func turnedOff(_ tx: some StoreTransaction, userID: String, now: Int64) throws {
        try tx.enqueue(ReminderSQL.dropMarks, [.text(userID)])
        try tx.enqueue(ReminderSQL.cancelAll, [.text(userID), .integer(now)])
        try tx.enqueue(ReminderSQL.dropQueuedAlerts, [.text(userID)])
    }

    /// Recomputes after a profile write when anything the schedule reads changed (reminder
    /// settings, wake / sleep times, zone, cups, the goal's inputs), and the bills' reminders
    /// when the settings, the zone or the wake / sleep times changed; turning reminders off cancels every pending
    /// reminder of the user (bills' included).
    /// - Throws: the engine's error.
    public static func profileChanged(
        _ tx: some StoreTransaction, previous: UserProfile, current: UserProfile, now: Int64
    ) throws {
        guard previous.reminders.enabled || current.reminders.enabled else { return }
        // Bill reminders are sent only while the user is awake (`BillAlertHours`).
        let bills =
            previous.reminders != current.reminders || previous.timezone != current.timezone
            || previous.wakeTime != current.wakeTime || previous.sleepTime != current.sleepTime
        let same =
            !bills
            && previous.cupSizesMl == current.cupSizesMl
            && HydrationRules.baseGoalMl(previous) == HydrationRules.baseGoalMl(current)
        guard !same else { return }
        guard current.reminders.enabled else {
            try turnedOff(tx, userID: current.id, now: now)
            return
        }
        try replan(tx, userID: current.id, profile: current, intakeWrittenAt: nil, now: now)
        if bills { try BillReminders.replanAll(tx, userID: current.id, profile: current, now: now) }
    }

    /// Recomputes once after a sync push that applied entry, day, profile or bill mutations
    /// (their bookkeeping ran with `planReminders: false`): reads the profile as the push left it
    /// (one statement); the bills' reminders when bills or the profile were written
    /// (`revisedBills`: the bills the push revised, with their content before it). With
    /// reminders off, a profile write cancels every pending reminder. `entryDeltas` (every entry
    /// version the push made appear or disappear) decide as for a REST write: entries all drunk
    /// before the hourly history do not recompute (`reachesPlan`), and only new entries drunk
    /// from two days before the reminder day answer a reminder (`intakeWritten`).
    /// - Throws: the engine's error.
    public static func pushed(
        _ tx: some StoreTransaction, userID: String, entryDeltas: [EntryDelta], daysWritten: Bool, profileWritten: Bool,
        billsWritten: Bool, revisedBills: [String: BillContent] = [:], now: Int64
    ) throws {
        guard let profile = try tx.queryOne(BookkeepingSQL.profile, [.text(userID)]).map({ StoreRows.user($0).profile })
        else { return }
        guard profile.reminders.enabled else {
            guard profileWritten else { return }
            try turnedOff(tx, userID: userID, now: now)
            return
        }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        if reachesPlan(entryDeltas, clock: clock, now: now) || daysWritten || profileWritten {
            let window = window(wakeTime: profile.wakeTime, sleepTime: profile.sleepTime, clock: clock, now: now)
            let intake = window.map { intakeWritten(entryDeltas, window: $0) } ?? false
            try replan(tx, userID: userID, profile: profile, intakeWrittenAt: intake ? now : nil, now: now, window: window)
        }
        if billsWritten || profileWritten {
            try BillReminders.replanAll(tx, userID: userID, profile: profile, revised: revisedBills, now: now)
        }
    }

    /// What a writer that knows the user's zone, wake and sleep times before taking the user's
    /// lock sends in the lock's pipeline so that the recompute of a water write costs no round
    /// trip of its own (`prefetch(…)`, then `EntryBookkeeping.entriesChanged(reminders:)`).
    public struct Prefetch: Sendable {
        /// The profile fields the reads were made for (used only when the locked profile agrees).
        public let timezone: String
        public let wakeTime: String
        public let sleepTime: String
        /// The reads, to append to the lock's pipeline.
        public let statements: [SQLStatement]
        @usableFromInline let window: WakingWindow
    }

    /// The reads of a water write's recompute for a user with zone `timezone`, wake and sleep
    /// times and stored `reminders` settings as read before the lock; nil when reminders are off
    /// (nothing to read) or the times do not parse.
    public static func prefetch(
        userID: String, timezone: String, wakeTime: String, sleepTime: String, reminders: String?, now: Int64
    ) -> Prefetch? {
        let settings = ReminderSettings(stored: reminders)
        guard settings.enabled else { return nil }
        let clock = ZoneClocks.shared.clock(timezone)
        guard let window = window(wakeTime: wakeTime, sleepTime: sleepTime, clock: clock, now: now) else { return nil }
        return Prefetch(
            timezone: timezone, wakeTime: wakeTime, sleepTime: sleepTime,
            statements: reads(
                userID: userID, window: window, today: clock.localDate(of: now), historyLimit: planHistoryLimit(settings),
                lastIntakeFrom: nil),
            window: window)
    }

    /// The plan's reads: the user's days (`ReminderSQL.planDays`: the hourly history summed per
    /// hour by the database, ≤ 24 rows; the reminder day's buckets and the next day's, ≤ 48; the
    /// reminder day's context), the pending and latest sent hydration reminders (≤ `historyLimit`
    /// rows), and (with `lastIntakeFrom`) the latest intake write.
    @usableFromInline static func reads(
        userID: String, window: WakingWindow, today: LocalDate, historyLimit: Int, lastIntakeFrom: Int64?
    ) -> [SQLStatement] {
        let user = SQLValue.text(userID)
        var reads = [
            SQLStatement(
                ReminderSQL.planDays,
                [
                    user, .text(HourlyDrinking.firstKeptDay(today: today).description), .text(today.description),
                    .text(window.day.description), .text(window.day.adding(days: 1).description),
                ]),
            SQLStatement(ReminderSQL.planHistory, [user, .integer(Int64(historyLimit))]),
        ]
        if let from = lastIntakeFrom { reads.append(SQLStatement(ReminderSQL.lastIntakeWrite, [user, .integer(from)])) }
        return reads
    }

    /// The reads of one plan (one round trip, or none with `prefetched` rows of `prefetch` when
    /// the locked profile still has its zone and times: the water write's `deltas` are added to
    /// the buckets read before it) and the decision; `intakeWrittenAt` nil reads the latest
    /// intake write. Returns true when a reminder is pending afterwards. `@inlinable` (the
    /// recompute of every entry write), so that each store specializes it for its own transaction
    /// and row types, as `EntryBookkeeping.entriesChanged`.
    @inlinable @discardableResult static func replan<T: StoreTransaction>(
        _ tx: T, userID: String, profile: UserProfile, intakeWrittenAt: Int64?, now: Int64, window given: WakingWindow? = nil,
        prefetched: (prefetch: Prefetch, rows: ArraySlice<[T.Connection.Row]>, deltas: [EntryDelta])? = nil
    ) throws -> Bool {
        let clock = ZoneClocks.shared.clock(profile.timezone)
        guard
            let window = given
                ?? Self.window(wakeTime: profile.wakeTime, sleepTime: profile.sleepTime, clock: clock, now: now)
        else { return false }
        let today = clock.localDate(of: now)
        var rows: [[T.Connection.Row]]
        var added: [(HourlyDrinking.Bucket, Int)] = []
        if let p = prefetched, intakeWrittenAt != nil, p.prefetch.timezone == profile.timezone,
            p.prefetch.wakeTime == profile.wakeTime, p.prefetch.sleepTime == profile.sleepTime, p.prefetch.window == window
        {
            rows = Array(p.rows)
            added = HourlyDrinking.changes(p.deltas.lazy.map { ($0.loggedAt, $0.amountMl) }, clock: clock, today: today).map {
                ($0.key, $0.value)
            }
        } else {
            rows = try tx.pipeline(
                reads(
                    userID: userID, window: window, today: today, historyLimit: planHistoryLimit(profile.reminders),
                    lastIntakeFrom: intakeWrittenAt == nil ? intakeReadFrom(window) : nil))
        }
        let days = ReminderSQL.days(rows[0])
        let history = rows[1].map { ReminderSQL.stored($0) }
        let pending = history.first { $0.kind == .hydration && $0.state == "pending" }
        if intakeWrittenAt == nil, let pending, pending.snoozedFrom != nil { return true }
        let input = HydrationScheduleInput(
            window: window, clock: clock, settings: profile.reminders, cupSizesMl: profile.cupSizesMl,
            goalMl: HydrationRules.dayGoalMl(
                baseGoalMl: HydrationRules.baseGoalMl(profile), context: days.context),
            intake: intake(days.buckets + added, window: window, clock: clock),
            lastIntakeWrittenAt: intakeWrittenAt ?? (rows.count > 2 ? rows[2].first?[0].int64 : nil),
            hourly: HourlyDrinking(buckets: (days.hourly + added).lazy.map { (bucket: $0.0, ml: $0.1) }, today: today),
            history: history.map(\.record), now: now)
        let plan = HydrationSchedule.plan(input)
        try save(tx, userID: userID, plan: plan, pending: pending, now: now)
        return plan.reminder != nil
    }

    /// Writes `plan` over the pending row: the reminder (moved in place, keeping its id), a
    /// re-plan mark, or nothing (the pending one cancelled). Nothing is written when the pending
    /// row already says what the plan says — the same due time, or a reminder already due (the
    /// scheduler's next step sends it) that the plan would make due now — with the same cup and
    /// day.
    @inlinable static func save(
        _ tx: some StoreTransaction, userID: String, plan: HydrationPlan, pending: StoredReminder?, now: Int64
    ) throws {
        let next: (dueAt: Int64, suggested: Int?)? =
            if let r = plan.reminder { (r.dueAt, r.suggestedAmountMl) } else { plan.recheckAt.map { ($0, nil) } }
        if let pending, let next, pending.dueAt == next.dueAt || (pending.dueAt <= now && next.dueAt <= now),
            pending.suggestedMl == next.suggested, pending.localDate == plan.day.description, pending.snoozedFrom == nil
        {
            return
        }
        if let pending, pending.suggestedMl != nil, next?.suggested == nil {
            try tx.enqueue(ReminderSQL.cancel, [.text(pending.id), .integer(now)])
        } else if let pending, next == nil {
            try tx.enqueue(ReminderSQL.dropMark, [.text(pending.id)])
        }
        guard let next else { return }
        try tx.enqueue(
            ReminderSQL.upsertNext,
            [
                .text(newID()), .text(userID), .integer(next.dueAt), next.suggested.map { .integer(Int64($0)) } ?? .null,
                .text(plan.day.description), .integer(now),
            ])
    }

    /// How far before the reminder day's start the latest intake write is looked for (entries
    /// by `loggedAt`, through `water_entries_list`): two days, enough for the ignored streak.
    @usableFromInline static let lookBackMs: Int64 = 2 * 86_400_000

    /// Where the latest intake write is looked for in `window`'s plan: entries drunk from
    /// `lookBackMs` before the reminder day's start on (`ReminderSQL.lastIntakeWrite`'s bound; the
    /// same for `intakeWritten` and `readsIntakeOf`), epoch ms.
    @inlinable static func intakeReadFrom(_ window: WakingWindow) -> Int64 {
        window.dayStart - lookBackMs
    }

    /// The reminder day's intake from the stored hourly buckets (`drinking_hours`, kept by the
    /// same write), as one event at the day's start: every bucket of the local day, and — for a
    /// window whose `sleepAt` is after midnight — the next day's buckets of the hours before
    /// `sleepAt`'s wall time (the hour `sleepAt` falls in counts whole). Wall hours, no instant
    /// arithmetic.
    @usableFromInline static func intake(
        _ buckets: [(HourlyDrinking.Bucket, Int)], window: WakingWindow, clock: ZoneClock
    ) -> [IntakeEvent] {
        let next = window.day.adding(days: 1)
        let crosses = window.countEnd > clock.startOfDay(next)
        let sleepMinute = crosses ? clock.wallMinuteOfDay(at: window.countEnd) : 0
        var total = 0
        for (bucket, ml) in buckets {
            if bucket.date == window.day || (crosses && bucket.date == next && bucket.hour * 60 < sleepMinute) { total += ml }
        }
        return [IntakeEvent(loggedAt: window.dayStart, amountMl: total)]
    }

    /// A new reminder id: a lower-case UUID (`:drink` uses it as the entry's id).
    public static func newID() -> String { UUID().uuidString.lowercased() }
}

/// One stored reminder row, as the planner and the routes read it.
public struct StoredReminder: Sendable, Equatable {
    /// The reminder id (lower-case UUID).
    public var id: String
    /// Hydration, bill or campaign.
    public var kind: ReminderKind
    /// Due instant, ms since the epoch.
    public var dueAt: Int64
    /// The stored state: `pending`, `sent` or an outcome.
    public var state: String
    /// The suggested cup (hydration), ml; nil for a re-plan mark or a bill / campaign reminder.
    public var suggestedMl: Int?
    /// The reminder day, `YYYY-MM-DD`.
    public var localDate: String
    /// Bill / campaign: its id; a snoozed-to hydration reminder: the snoozed one's id.
    public var subjectID: String?
    /// When it was handed to the push outbox, ms.
    public var sentAt: Int64?

    @usableFromInline init(
        id: String, kind: ReminderKind, dueAt: Int64, state: String, suggestedMl: Int?, localDate: String, subjectID: String?,
        sentAt: Int64?
    ) {
        self.id = id
        self.kind = kind
        self.dueAt = dueAt
        self.state = state
        self.suggestedMl = suggestedMl
        self.localDate = localDate
        self.subjectID = subjectID
        self.sentAt = sentAt
    }

    /// A pending hydration row with a `subject_id`: the reminder a `:snooze` created.
    public var snoozedFrom: String? { kind == .hydration ? subjectID : nil }

    /// True for a re-plan mark (a pending hydration row without a suggested cup).
    public var isMark: Bool { kind == .hydration && state == "pending" && suggestedMl == nil }

    /// As `HydrationSchedule` and §9 see it: `sent` (no outcome yet) reads as `pending`.
    public var record: ReminderRecord {
        ReminderRecord(
            id: id, kind: kind, dueAt: dueAt, sentAt: sentAt,
            outcome: ReminderOutcome(rawValue: state) ?? .pending)
    }
}

/// The reminder statements both engines run (written once).
public enum ReminderSQL {
    static let columns = "id, kind, due_at, state, suggested_ml, local_date, subject_id, sent_at"

    /// What the plan reads of the user's days, in one statement, each row tagged with its part
    /// in column 0: **0** the hourly history of `HourlyDrinking` — per hour, the earliest day
    /// with a bucket and the sum over the complete days `?2 ≤ day < ?3` (today), walking
    /// `drinking_hours_by_hour`; **1** the buckets of the reminder day ?4 and the next day ?5 (a
    /// window crossing midnight); **2** the reminder day's context. Columns 1…5: local date, hour,
    /// ml, max temperature °C, active minutes (NULL where the part has none); ?1 user. Decode
    /// with `days(_:)`. One statement instead of three: on SQLite each costs about 9,000
    /// instructions in the single writer however few rows it returns.
    public static let planDays = SQLText(
        """
        SELECT 0, MIN(local_date), hour, CAST(SUM(amount_ml) AS BIGINT), \(noTemperature), \(noMinutes)
        FROM drinking_hours WHERE user_id = ?1 AND local_date >= ?2 AND local_date < ?3 GROUP BY hour
        UNION ALL
        SELECT 1, local_date, hour, amount_ml, \(noTemperature), \(noMinutes) FROM drinking_hours
        WHERE user_id = ?1 AND local_date >= ?4 AND local_date <= ?5
        UNION ALL
        SELECT 2, local_date, CAST(NULL AS INTEGER), CAST(NULL AS BIGINT), max_temperature_c, active_minutes FROM days
        WHERE user_id = ?1 AND local_date = ?4
        """)
    /// Typed NULLs: PostgreSQL resolves a `UNION` column's type pair by pair, and two untyped
    /// NULLs would become text, which the context's number does not match.
    static let noTemperature = "CAST(NULL AS DOUBLE PRECISION)"
    static let noMinutes = "CAST(NULL AS BIGINT)"

    /// The parts of `planDays`' rows: the hourly history's buckets, the reminder day's (and the
    /// next day's) buckets, and the reminder day's context.
    @inlinable static func days(
        _ rows: [some SQLRowValues]
    ) -> (hourly: [(HourlyDrinking.Bucket, Int)], buckets: [(HourlyDrinking.Bucket, Int)], context: DayContextContent?) {
        var out: (hourly: [(HourlyDrinking.Bucket, Int)], buckets: [(HourlyDrinking.Bucket, Int)], context: DayContextContent?) =
            ([], [], nil)
        for row in rows {
            let part = row[0].int64
            if part == 2 {
                out.context = DayContextContent(maxTemperatureC: row[4].double, activeMinutes: row[5].int64.map { Int($0) })
                continue
            }
            guard let date = row[1].text.flatMap(LocalDate.init(parsing:)), let hour = row[2].int64 else { continue }
            let bucket = (HourlyDrinking.Bucket(date: date, hour: Int(hour)), Int(row[3].int64 ?? 0))
            if part == 0 { out.hourly.append(bucket) } else { out.buckets.append(bucket) }
        }
        return out
    }
    /// The user's latest reminders (`reminders_history`, which gives the order); binds ?1 user,
    /// ?2 limit.
    public static let history = SQLText(
        "SELECT \(columns) FROM reminders WHERE user_id = ?1 ORDER BY due_at DESC, id DESC LIMIT ?2")
    /// What the plan reads of the history (`ReminderPlanner.planHistoryLimit`): the pending
    /// hydration row and the sent hydration reminders that were not cancelled, newest first,
    /// through the partial index `reminders_plan`, which holds just these rows (migration 0019:
    /// bill, campaign and cancelled rows are not stepped over); binds ?1 user, ?2 limit. The
    /// `WHERE` repeats the index's predicate word for word, so both planners can use it.
    public static let planHistory = SQLText(
        """
        SELECT \(columns) FROM reminders
        WHERE user_id = ?1 AND kind = 'hydration' AND (state = 'pending' OR (sent_at IS NOT NULL AND state <> 'cancelled'))
        ORDER BY due_at DESC, id DESC LIMIT ?2
        """)
    /// The latest intake write: the latest creation (`created_at`, ms) among the 200 live entries
    /// drunk most recently from ?2 on; ?1 user. Bounded, in `water_entries_list`'s order: a user
    /// who logs sips has thousands of entries in the look-back, and the scheduler asks at every
    /// send. (Giving that index `created_at` to spare the row lookups turned the summary's
    /// per-amount seeks away from `water_entries_amounts`.) Only an entry created after
    /// 200 others drunk later than it within the look-back is missed (a deep backfill; the streak
    /// then counts from the newest of those 200).
    public static let lastIntakeWrite = SQLText(
        """
        SELECT MAX(created_at) FROM (
            SELECT created_at FROM water_entries WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2
            ORDER BY logged_at DESC, id DESC LIMIT 200
        ) AS recent
        """)
    /// Inserts the next hydration reminder, or moves the pending one (keeping its id); binds ?1
    /// id, ?2 user, ?3 due, ?4 suggested ml (NULL: a re-plan mark), ?5 local date, ?6 now.
    @usableFromInline static let upsertNext = SQLText(
        """
        INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id, created_at, updated_at)
        VALUES (?1, ?2, 'hydration', ?3, 'pending', ?4, ?5, NULL, ?6, ?6)
        ON CONFLICT (user_id) WHERE kind = 'hydration' AND state = 'pending' DO UPDATE SET
            due_at = excluded.due_at, suggested_ml = excluded.suggested_ml, local_date = excluded.local_date,
            subject_id = NULL, updated_at = excluded.updated_at
        """)
    /// ?1 id, ?2 now.
    @usableFromInline static let cancel = SQLText(
        "UPDATE reminders SET state = 'cancelled', updated_at = ?2 WHERE id = ?1 AND state = 'pending'")
    /// ?1 id.
    @usableFromInline static let dropMark = SQLText("DELETE FROM reminders WHERE id = ?1 AND state = 'pending'")
    /// ?1 user.
    static let dropMarks = SQLText(
        "DELETE FROM reminders WHERE user_id = ?1 AND kind = 'hydration' AND state = 'pending' AND suggested_ml IS NULL")
    /// ?1 user, ?2 now.
    static let cancelAll = SQLText(
        "UPDATE reminders SET state = 'cancelled', updated_at = ?2 WHERE user_id = ?1 AND state = 'pending'")
    /// The user's alerts not sent yet (every alert is a reminder's); ?1 user.
    static let dropQueuedAlerts = SQLText(
        "DELETE FROM push_outbox WHERE user_id = ?1 AND push_type = 'alert' AND \(PushSQL.pending)")

    /// One reminder of the user, locked; ?1 user, ?2 id.
    static let byID = SQLText { d in "SELECT \(columns) FROM reminders WHERE user_id = ?1 AND id = ?2 \(d.forUpdate())" }
    /// The user's pending hydration row; ?1 user.
    static let pendingHydration = SQLText(
        "SELECT \(columns) FROM reminders WHERE user_id = ?1 AND kind = 'hydration' AND state = 'pending'")
    /// `:drink`: ?1 id, ?2 outcome, ?3 now (overwrites any earlier outcome).
    static let setOutcome = SQLText("UPDATE reminders SET state = ?2, updated_at = ?3 WHERE id = ?1")
    /// The first outcome of a reminder; ?1 id, ?2 outcome, ?3 now.
    static let setOutcomeOnce = SQLText(
        "UPDATE reminders SET state = ?2, updated_at = ?3 WHERE id = ?1 AND state IN ('pending', 'sent', 'ignored')")
    /// `:dismiss` / `:open`: the first outcome, and a pending reminder counts as seen (`sent_at`
    /// = now); ?1 id, ?2 outcome, ?3 now.
    static let setOutcomeSeen = SQLText(
        """
        UPDATE reminders SET state = ?2, sent_at = COALESCE(sent_at, ?3), updated_at = ?3
        WHERE id = ?1 AND state IN ('pending', 'sent', 'ignored')
        """)
    /// The snoozed-to reminder (`subject_id` = the snoozed one, ?7), or the pending one moved to
    /// it; binds as `upsertNext`.
    static let upsertSnoozed = SQLText(
        """
        INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id, created_at, updated_at)
        VALUES (?1, ?2, 'hydration', ?3, 'pending', ?4, ?5, ?7, ?6, ?6)
        ON CONFLICT (user_id) WHERE kind = 'hydration' AND state = 'pending' DO UPDATE SET
            due_at = excluded.due_at, suggested_ml = excluded.suggested_ml, local_date = excluded.local_date,
            subject_id = excluded.subject_id, updated_at = excluded.updated_at
        """)

    @inlinable static func stored(_ row: some SQLRowValues) -> StoredReminder {
        StoredReminder(
            id: row[0].text ?? "", kind: row[1].text.flatMap(ReminderKind.init(rawValue:)) ?? .hydration,
            dueAt: row[2].int64 ?? 0, state: row[3].text ?? "pending", suggestedMl: row[4].int64.map { Int($0) },
            localDate: row[5].text ?? "", subjectID: row[6].text, sentAt: row[7].int64)
    }
}

extension ReminderRepository where Self: SQLStore {
    public func reminderOverview(userID: String, limit: Int) throws -> ReminderOverview {
        // One more than asked: a re-plan mark is not shown.
        let rows = try reading { c in
            try c.query(ReminderSQL.history, [.text(userID), .integer(Int64(limit + 1))]).map { ReminderSQL.stored($0) }
        }
        let shown = rows.filter { !$0.isMark }
        let next = shown.first { $0.kind == .hydration && $0.state == "pending" }.map {
            NextReminder(id: $0.id, dueAt: $0.dueAt, suggestedAmountMl: $0.suggestedMl ?? 0)
        }
        return ReminderOverview(next: next, recent: shown.prefix(limit).map(\.record))
    }
}

/// The notification actions (spec §9): each locks the user first (as every write of the user's
/// documents), then reads the reminder (and for `:drink` its entry) in the same round trip.
extension ReminderRepository where Self: SQLStore {
    public func drinkReminder(
        userID: String, reminderID: String, amountMl: Int?, deviceID: String?, now: Int64
    ) throws -> EntryCreateOutcome {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, reminder, rows) = try Self.lockAndRead(
                tx, userID: userID, reminderID: reminderID, also: [EntryStatements.fetch(userID: userID, id: reminderID, lock: true)])
            guard reminder.kind == .hydration else { throw RepositoryError.conflict(code: "reminder_not_hydration") }
            if let stored = EntryStatements.stamped(rows[0]) {
                guard !stored.deleted else { throw RepositoryError.conflict(code: "reminder_entry_deleted") }
                return .existing(stored.document)
            }
            let content = WaterEntryContent(
                amountMl: amountMl ?? reminder.suggestedMl ?? profile.cupSizesMl.first ?? 250, loggedAt: now,
                source: .notification)
            try tx.positionedWrite(
                of: .entry(userID, reminderID), userID: userID, EntrySQL.insert,
                [
                    .text(userID), .text(reminderID), .integer(Int64(content.amountMl)), .integer(now),
                    .text(content.source.rawValue), .null, .null, .integer(now), .integer(now), .integer(now),
                    .text(deviceID ?? ""),
                ])
            try tx.enqueue(ReminderSQL.setOutcome, [.text(reminderID), .text(ReminderOutcome.acted.rawValue), .integer(now)])
            try EntryBookkeeping.entriesChanged(
                tx, userID: userID, profile: profile, deltas: [EntryDelta(content, sign: 1)], now: now)
            return .created(
                WaterEntry(id: reminderID, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1, deleted: false))
        }
    }

    public func snoozeReminder(userID: String, reminderID: String, minutes: Int, now: Int64) throws -> NextReminder {
        try transaction { tx in
            let (profile, reminder, _) = try Self.lockAndRead(tx, userID: userID, reminderID: reminderID, also: [])
            guard reminder.kind == .hydration else { throw RepositoryError.conflict(code: "reminder_not_hydration") }
            try tx.enqueue(
                ReminderSQL.setOutcomeOnce, [.text(reminderID), .text(ReminderOutcome.snoozed.rawValue), .integer(now)])
            let suggested = reminder.suggestedMl ?? profile.cupSizesMl.first ?? 250
            let due = now + Int64(minutes) * 60_000
            let day = ReminderPlanner.reminderDay(
                of: due, wakeTime: profile.wakeTime, sleepTime: profile.sleepTime,
                clock: ZoneClocks.shared.clock(profile.timezone))
            try tx.enqueue(
                ReminderSQL.upsertSnoozed,
                [
                    .text(ReminderPlanner.newID()), .text(userID), .integer(due), .integer(Int64(suggested)),
                    .text(day.description), .integer(now), .text(reminderID),
                ])
            // The row that is now pending (a moved one keeps its id).
            guard let row = try tx.queryOne(ReminderSQL.pendingHydration, [.text(userID)]) else {
                throw RepositoryError.conflict(code: "conflict")
            }
            let next = ReminderSQL.stored(row)
            return NextReminder(id: next.id, dueAt: next.dueAt, suggestedAmountMl: next.suggestedMl ?? suggested)
        }
    }

    public func recordReminderOutcome(userID: String, reminderID: String, outcome: ReminderOutcome, now: Int64) throws {
        try transaction { tx in
            let (profile, reminder, _) = try Self.lockAndRead(tx, userID: userID, reminderID: reminderID, also: [])
            guard reminder.state == "pending" || reminder.state == "sent" || reminder.state == "ignored" else { return }
            // A pending one answered from the app counts as seen now (its gap and `maxPerDay`).
            try tx.enqueue(ReminderSQL.setOutcomeSeen, [.text(reminderID), .text(outcome.rawValue), .integer(now)])
            if reminder.state == "pending", reminder.kind == .hydration, profile.reminders.enabled {
                try ReminderPlanner.replan(tx, userID: userID, profile: profile, intakeWrittenAt: nil, now: now)
            }
            // A bill's pending row answered (an alert of it already delivered to another device
            // while it waits to be sent again, docs/reminders.md "Bill reminders (built)"): the
            // bill's next reminder is planned, or it would have none until its next write.
            if reminder.state == "pending", reminder.kind == .bill,
                let bill = try tx.queryOne(DispatchSQL.bill, [.text(userID), .text(reminder.subjectID ?? "")]).map({ StoreRows.bill($0) })
            {
                try BillReminders.billChanged(
                    tx, userID: userID, profile: profile, billID: bill.id, bill: bill.content, deleted: false, now: now)
            }
        }
    }

    /// The user's lock, the reminder (not a re-plan mark) and `also`, in one round trip.
    /// - Throws: `RepositoryError.notFound` (no such user or not the user's reminder).
    static func lockAndRead(
        _ tx: Transaction, userID: String, reminderID: String, also: [SQLStatement]
    ) throws -> (UserProfile, StoredReminder, [[Transaction.Connection.Row]]) {
        let rows = try tx.pipeline(
            [SQLStatement(UserLock.statement, [.text(userID)]), SQLStatement(ReminderSQL.byID, [.text(userID), .text(reminderID)])]
                + also)
        guard let profile = rows[0].first.map({ StoreRows.user($0).profile }),
            let reminder = rows[1].first.map({ ReminderSQL.stored($0) }), !reminder.isMark
        else { throw RepositoryError.notFound }
        return (profile, reminder, Array(rows.dropFirst(2)))
    }
}
