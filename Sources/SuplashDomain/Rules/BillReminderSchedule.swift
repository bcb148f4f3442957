/// A bill-due reminder to send.
public struct PlannedBillReminder: Sendable, Equatable {
    /// The bill.
    public var billID: String
    /// When to send it, ms since the epoch.
    public var dueAt: Int64
    /// The local day it is for.
    public var localDate: LocalDate
    /// Days until the bill's `dueDate`: one of the offsets, or 0 on the due day.
    public var daysBeforeDue: Int

    /// A reminder for `billID` at `dueAt` (ms) on local day `localDate`.
    public init(billID: String, dueAt: Int64, localDate: LocalDate, daysBeforeDue: Int) {
        self.billID = billID
        self.dueAt = dueAt
        self.localDate = localDate
        self.daysBeforeDue = daysBeforeDue
    }
}

/// Bill-due reminders (issue "smart reminders", docs/reminders.md "Bill reminders"): a pure
/// function of the bill's current state, the user's settings, what was already sent for the
/// bill and `now`, so a paid, deleted or moved bill needs only a recompute.
public enum BillReminderSchedule {
    /// Days before `dueDate` with a reminder (the due day itself always has one).
    public static let defaultOffsetsDays = [3, 1]
    /// Local send time, moved to the end of quiet hours when it falls in them.
    public static let sendTime = ClockTime(validMinuteOfDay: 600)

    /// The next reminder for one bill, or nil: none when reminders or bill reminders are off,
    /// when the bill is paid or deleted, or when every reminder day has passed.
    ///
    /// Candidate days are `dueDate − offset` for each offset in `offsetsDays` (positive ones;
    /// duplicates ignored) and `dueDate`. A day's reminder is at `sendTime` local, or at the
    /// end of the quiet period containing it; it is dropped when that end falls on a later
    /// local day, when its instant is before `now`, or when a reminder for this bill was
    /// already sent on that local day (at most one per bill per day).
    ///
    /// - Parameters:
    ///   - sentAt: when earlier reminders for this bill were sent (ms), any order.
    public static func next(
        billID: String, bill: BillContent, deleted: Bool, settings: ReminderSettings,
        clock: ZoneClock, sentAt: [Int64], offsetsDays: [Int] = defaultOffsetsDays,
        now: Int64
    ) -> PlannedBillReminder? {
        guard settings.enabled, settings.billReminders, !deleted, bill.paidAt == nil else { return nil }
        let sentDays = Set(sentAt.map { clock.localDate(of: $0) })
        let offsets = Set(offsetsDays.filter { $0 > 0 }).union([0]).sorted(by: >)
        for offset in offsets {
            let day = bill.dueDate.adding(days: -offset)
            guard !sentDays.contains(day) else { continue }
            guard let at = sendInstant(on: day, settings: settings, clock: clock), at >= now else { continue }
            return PlannedBillReminder(billID: billID, dueAt: at, localDate: day, daysBeforeDue: offset)
        }
        return nil
    }

    /// A reminder day's send instant (ms): `sendTime` local on `day`, or the end of the quiet
    /// period containing it; nil when that end falls on a later local day.
    public static func sendInstant(on day: LocalDate, settings: ReminderSettings, clock: ZoneClock) -> Int64? {
        var at = clock.instant(of: day, at: sendTime)
        if let quiet = settings.quietHours { at = quiet.firstAllowedInstant(atOrAfter: at, clock: clock) }
        return clock.localDate(of: at) == day ? at : nil
    }

    /// Whether a pending reminder for local day `day` is under way at `now`: `day` is still one
    /// of `bill`'s reminder days (`dueDate − offset` for a positive offset in `offsetsDays`, or
    /// `dueDate`) and its send instant has come. Such a reminder — in the scheduler's next step,
    /// waiting behind another alert, or late — is left to the scheduler (which sends it, or moves
    /// it on when too late, `maySendLate`) instead of being moved to the next day by a write of
    /// the bill or the settings, which `next` (only instants at or after `now`) would do.
    public static func isUnderWay(
        day: LocalDate, bill: BillContent, settings: ReminderSettings, clock: ZoneClock,
        offsetsDays: [Int] = defaultOffsetsDays, now: Int64
    ) -> Bool {
        let offset = bill.dueDate.dayNumber - day.dayNumber
        guard offset == 0 || (offset > 0 && offsetsDays.contains(offset)) else { return false }
        return sendInstant(on: day, settings: settings, clock: clock).map { $0 <= now } ?? false
    }

    /// Whether a bill reminder that fell due at `dueAt` for local day `day` may still be sent
    /// at `now` (docs/reminders.md, "Late alerts"): within `lifetimeMs` (ms) of its due time,
    /// or later on that same local day while `now` is outside the quiet hours and before the
    /// user's sleep time of that day's awake period (`WakingWindow`; skipped when `wake` or
    /// `sleep` is nil). Otherwise its text ("due in 3 days") would be wrong or it would come
    /// at night: the scheduler moves it to the bill's next reminder day instead.
    public static func maySendLate(
        day: LocalDate, dueAt: Int64, settings: ReminderSettings, wake: ClockTime?, sleep: ClockTime?,
        clock: ZoneClock, lifetimeMs: Int64, now: Int64
    ) -> Bool {
        if now - dueAt <= lifetimeMs { return true }
        guard clock.localDate(of: now) == day else { return false }
        if let quiet = settings.quietHours, quiet.contains(minuteOfDay: clock.wallMinuteOfDay(at: now)) { return false }
        guard let wake, let sleep else { return true }
        return now < WakingWindow(day: day, wake: wake, sleep: sleep, clock: clock).sleepAt
    }
}
