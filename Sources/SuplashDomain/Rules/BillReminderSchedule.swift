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
    /// Local send time, moved to the next slot (`BillAlertHours.firstSlot`) when quiet or asleep.
    public static let sendTime = ClockTime(validMinuteOfDay: 600)

    /// The next reminder for one bill, or nil: none when reminders or bill reminders are off,
    /// when the bill is paid or deleted, or when every reminder day has passed.
    ///
    /// Candidate days are `dueDate − offset` for each offset in `offsetsDays` (positive ones;
    /// duplicates ignored) and `dueDate`. A day's reminder is at `sendTime` local, or at the
    /// first slot after it when that is quiet or the user is asleep (`sendInstant`); it is
    /// dropped when no slot is left that day, when its instant is before `now`, or when a
    /// reminder for this bill was already sent on that local day (at most one per bill per day).
    ///
    /// - Parameters:
    ///   - sentAt: when earlier reminders for this bill were sent (ms), any order.
    public static func next(
        billID: String, bill: BillContent, deleted: Bool, hours: BillAlertHours, sentAt: [Int64],
        offsetsDays: [Int] = defaultOffsetsDays, now: Int64
    ) -> PlannedBillReminder? {
        guard hours.settings.enabled, hours.settings.billReminders, !deleted, bill.paidAt == nil else { return nil }
        let sentDays = Set(sentAt.map { hours.clock.localDate(of: $0) })
        let offsets = Set(offsetsDays.filter { $0 > 0 }).union([0]).sorted(by: >)
        for offset in offsets {
            let day = bill.dueDate.adding(days: -offset)
            guard !sentDays.contains(day) else { continue }
            guard let at = sendInstant(on: day, hours: hours), at >= now else { continue }
            return PlannedBillReminder(billID: billID, dueAt: at, localDate: day, daysBeforeDue: offset)
        }
        return nil
    }

    /// A reminder day's send instant (ms): the first slot on `day` from `sendTime` local on
    /// (`BillAlertHours.firstSlot`: outside the quiet hours, while the user is awake); nil when
    /// none is left that day.
    public static func sendInstant(on day: LocalDate, hours: BillAlertHours) -> Int64? {
        hours.firstSlot(on: day, notBefore: hours.clock.instant(of: day, at: sendTime))
    }

    /// Whether `day` is one of `bill`'s reminder days: `dueDate − offset` for a positive offset
    /// in `offsetsDays`, or `dueDate` itself.
    public static func isReminderDay(_ day: LocalDate, of bill: BillContent, offsetsDays: [Int] = defaultOffsetsDays) -> Bool {
        let offset = bill.dueDate.dayNumber - day.dayNumber
        return offset == 0 || (offset > 0 && offsetsDays.contains(offset))
    }

    /// The instant (ms) a pending reminder for local day `day`, stored at `storedDueAt`, keeps
    /// when a write of the bill or the settings recomputes it; nil when it is not under way
    /// and `next` plans it. Under way means `day` is still a reminder day and its send instant
    /// under the current settings has come — `next` (only instants from `now` on) would skip
    /// the day. Then:
    /// - due within `waitMs` (in the scheduler's next step, waiting behind another alert, or
    ///   late: the scheduler decides, `dispatchInstant`): `storedDueAt`, unchanged;
    /// - stored later (the zone or the quiet hours changed): the first slot left on `day`
    ///   (`BillAlertHours.firstSlot`), or nil when none is.
    public static func underWayInstant(
        day: LocalDate, storedDueAt: Int64, bill: BillContent, hours: BillAlertHours, waitMs: Int64,
        offsetsDays: [Int] = defaultOffsetsDays, now: Int64
    ) -> Int64? {
        guard isReminderDay(day, of: bill, offsetsDays: offsetsDays),
            let own = sendInstant(on: day, hours: hours), own <= now
        else { return nil }
        if storedDueAt <= now + waitMs { return storedDueAt }
        return hours.firstSlot(on: day, notBefore: now)
    }

    /// When the scheduler, reaching a due bill reminder for local day `day` at `now`, sends it
    /// (docs/reminders.md, "Late alerts"): `now` when it is a slot on `day`
    /// (`BillAlertHours.firstSlot`), else the day's next slot — a reminder found late, or
    /// waiting behind another alert into quiet hours or sleep; nil when no slot is left that day
    /// (then `next` plans the bill's next reminder day). So "due in 3 days" is only ever sent on
    /// its day, and never while the user sleeps or asked for quiet.
    public static func dispatchInstant(day: LocalDate, hours: BillAlertHours, now: Int64) -> Int64? {
        hours.firstSlot(on: day, notBefore: now)
    }
}

/// When a bill alert may reach one user outside its planned instant: outside their quiet
/// hours and while they are awake (`wakeTime` … `sleepTime`, `WakingWindow`), in their zone.
public struct BillAlertHours: Sendable {
    /// Quiet hours come from here.
    public var settings: ReminderSettings
    /// The awake period; when either is nil only the quiet hours count.
    public var wake: ClockTime?
    /// See `wake`.
    public var sleep: ClockTime?
    /// The user's zone.
    public var clock: ZoneClock

    /// The hours of a user with `settings`, awake `wake` … `sleep`, in `clock`'s zone.
    public init(settings: ReminderSettings, wake: ClockTime?, sleep: ClockTime?, clock: ZoneClock) {
        self.settings = settings
        self.wake = wake
        self.sleep = sleep
        self.clock = clock
    }

    /// The first instant (ms) at or after `notBefore` on local day `day` that is outside the
    /// quiet hours and inside an awake period (one that started the day before counts); nil
    /// when none is left on `day`.
    public func firstSlot(on day: LocalDate, notBefore: Int64) -> Int64? {
        var t = notBefore
        // Each step moves to the end of a quiet period or to a wake time: a handful at most.
        for _ in 0..<8 {
            guard clock.localDate(of: t) == day else { return nil }
            if let quiet = settings.quietHours, quiet.contains(minuteOfDay: clock.wallMinuteOfDay(at: t)) {
                t = quiet.firstAllowedInstant(atOrAfter: t, clock: clock)
                continue
            }
            if let wake, let sleep, let nextWake = nextWake(atOrAfter: t, wake: wake, sleep: sleep) {
                guard nextWake != t else { return t }
                t = nextWake
                continue
            }
            return t
        }
        return nil
    }

    /// `t` when the user is awake then, else the next wake instant after it (nil: none within
    /// two days, an empty awake period).
    private func nextWake(atOrAfter t: Int64, wake: ClockTime, sleep: ClockTime) -> Int64? {
        let today = clock.localDate(of: t)
        var next: Int64?
        for offset in -1...1 {
            let w = WakingWindow(day: today.adding(days: offset), wake: wake, sleep: sleep, clock: clock)
            if w.wakeAt <= t && t < w.sleepAt { return t }
            if w.wakeAt > t && w.sleepAt > w.wakeAt { next = min(next ?? w.wakeAt, w.wakeAt) }
        }
        return next
    }
}
