/// One reminder day of a user (spec §9, docs/reminders.md "Waking window"): the awake
/// period `wakeTime … sleepTime` starting on local day `day`, and inside it the window in
/// which hydration reminders may fall, `wakeTime + 30 min … sleepTime − 60 min`.
///
/// A `sleepTime` at or before `wakeTime` is on the next local day; the whole window still
/// belongs to `day`, the day it started on. Wake and sleep instants follow
/// `ZoneClock.instant(of:at:)`: a time in a spring-forward gap moves to the next valid
/// minute, a repeated time is its first occurrence. Instants are ms since the epoch.
public struct WakingWindow: Sendable, Equatable {
    /// The local day the window started on; its goal and its `maxPerDay` apply.
    public let day: LocalDate
    /// The wake instant.
    public let wakeAt: Int64
    /// The sleep instant (on `day` or the day after).
    public let sleepAt: Int64
    /// First instant a reminder may fall on: `wakeAt` + 30 min.
    public let start: Int64
    /// Last instant a reminder may fall on: `sleepAt` − 60 min.
    public let end: Int64
    /// Start of local day `day`: water logged from here on counts for this reminder day.
    public let dayStart: Int64
    /// End (exclusive) of what counts for this reminder day: the later of the next local
    /// midnight and `sleepAt`.
    public let countEnd: Int64

    /// Minutes after waking before the first reminder.
    public static let afterWakeMinutes: Int64 = 30
    /// Minutes before sleeping after the last reminder.
    public static let beforeSleepMinutes: Int64 = 60

    /// True when no reminder fits (`end` before `start`: an awake period under 90 min).
    public var isEmpty: Bool { end < start }

    /// The window of local day `day` for a user with `wake` and `sleep` times in `clock`'s zone.
    public init(day: LocalDate, wake: ClockTime, sleep: ClockTime, clock: ZoneClock) {
        self.day = day
        wakeAt = clock.instant(of: day, at: wake)
        let sleepDay = sleep > wake ? day : day.adding(days: 1)
        sleepAt = max(clock.instant(of: sleepDay, at: sleep), wakeAt)
        start = wakeAt + Self.afterWakeMinutes * 60_000
        end = sleepAt - Self.beforeSleepMinutes * 60_000
        dayStart = clock.startOfDay(day)
        countEnd = max(clock.startOfDay(day.adding(days: 1)), sleepAt)
    }

    /// The window that holds `now` or, when none does, the next one to open: yesterday's
    /// when it crosses midnight and has not ended yet, else today's until its `end`, else
    /// tomorrow's.
    public static func current(at now: Int64, wake: ClockTime, sleep: ClockTime, clock: ZoneClock) -> WakingWindow {
        let today = clock.localDate(of: now)
        for offset in -1...0 {
            let w = WakingWindow(day: today.adding(days: offset), wake: wake, sleep: sleep, clock: clock)
            if now < w.end { return w }
        }
        return WakingWindow(day: today.adding(days: 1), wake: wake, sleep: sleep, clock: clock)
    }

    /// The next reminder day's window.
    public func next(wake: ClockTime, sleep: ClockTime, clock: ZoneClock) -> WakingWindow {
        WakingWindow(day: day.adding(days: 1), wake: wake, sleep: sleep, clock: clock)
    }
}
