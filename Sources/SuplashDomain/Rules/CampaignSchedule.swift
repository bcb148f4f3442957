/// The audience times of an admin campaign (spec §8 `POST /v1/admin/notifications`
/// `segment`): parts of each user's awake period, in the user's own zone.
public enum CampaignSegment: String, Sendable, CaseIterable {
    /// `wakeTime` … `wakeTime` + 4 h.
    case morning
    /// The middle 4 hours of the awake period.
    case noon
    /// The last 4 hours before `sleepTime`.
    case evening
    /// The whole awake period.
    case all
}

/// When a campaign reaches one user (spec §8, docs/reminders.md "Campaign segments"). Pure.
public enum CampaignSchedule {
    /// Length of the morning, noon and evening segments, ms.
    public static let segmentLength: Int64 = 4 * 3_600_000

    /// Only users with `reminders.enabled` receive campaigns.
    public static func reaches(_ settings: ReminderSettings) -> Bool { settings.enabled }

    /// The segment's instants `[start, end)` on reminder day `day`, inside the awake period
    /// `wakeAt … sleepAt` of `WakingWindow` (a period crossing midnight belongs to the day it
    /// started on). An awake period shorter than 4 h is the whole of every segment.
    public static func segment(
        _ segment: CampaignSegment, day: LocalDate, wake: ClockTime, sleep: ClockTime,
        clock: ZoneClock
    ) -> Range<Int64> {
        let w = WakingWindow(day: day, wake: wake, sleep: sleep, clock: clock)
        let (a, b) = (w.wakeAt, w.sleepAt)
        switch segment {
        case .morning: return a..<min(a + segmentLength, b)
        case .evening: return max(b - segmentLength, a)..<b
        case .all: return a..<b
        case .noon:
            let mid = a + (b - a) / 2
            return max(mid - segmentLength / 2, a)..<min(mid + segmentLength / 2, b)
        }
    }

    /// The instant (ms) to send a campaign to one user.
    ///
    /// - With `sendAt` (the wall date and time written in the campaign's `sendAt`): that
    ///   wall time in the user's zone (a time in a gap moves to the next valid minute), or
    ///   `now` when it has passed there.
    /// - Without: the start of the user's first segment that has not ended at `now`
    ///   (yesterday's when it crosses midnight and is still running, else today's, else
    ///   tomorrow's); `now` when that segment is already under way.
    public static func sendInstant(
        segment: CampaignSegment, sendAt: (date: LocalDate, time: ClockTime)?,
        wake: ClockTime, sleep: ClockTime, clock: ZoneClock, now: Int64
    ) -> Int64 {
        if let sendAt { return max(clock.instant(of: sendAt.date, at: sendAt.time), now) }
        let today = clock.localDate(of: now)
        for offset in -1...1 {
            let r = self.segment(segment, day: today.adding(days: offset), wake: wake, sleep: sleep, clock: clock)
            if now < r.upperBound { return max(r.lowerBound, now) }
        }
        return max(self.segment(segment, day: today.adding(days: 2), wake: wake, sleep: sleep, clock: clock).lowerBound, now)
    }

    /// When the scheduler, reaching a due campaign alert at `now`, sends it (docs/reminders.md,
    /// "Late alerts"): the first instant from `now` on that is outside the user's `quiet` hours
    /// and inside the alert's window — until the end of the segment it fell due in (with
    /// `sendAt`, the awake period it fell due in), or, due outside any (a `sendAt` at night, or
    /// moved past the segment's end by a wait behind another alert), until `lifetimeMs` (ms)
    /// after its due time. `now` sends it at once; a later instant moves it (quiet hours at the
    /// segment's start: their end); nil cancels it (the campaign's `failed` count) — a morning
    /// greeting is not sent in the evening, nor anything in the user's quiet hours.
    public static func dispatchInstant(
        segment: CampaignSegment, hasSendAt: Bool, dueAt: Int64, wake: ClockTime, sleep: ClockTime, quiet: QuietHours?,
        clock: ZoneClock, lifetimeMs: Int64, now: Int64
    ) -> Int64? {
        var end = dueAt + lifetimeMs
        let day = clock.localDate(of: dueAt)
        for offset in [-1, 0] {
            let r = self.segment(hasSendAt ? .all : segment, day: day.adding(days: offset), wake: wake, sleep: sleep, clock: clock)
            if r.contains(dueAt) { end = r.upperBound }
        }
        var t = now
        if let quiet, quiet.contains(minuteOfDay: clock.wallMinuteOfDay(at: t)) { t = quiet.firstAllowedInstant(atOrAfter: t, clock: clock) }
        return t < end ? t : nil
    }

    /// The wall date and minute written in an RFC 3339 timestamp, its offset ignored
    /// (`2026-12-02T09:00:00+03:00` → 2026-12-02, 09:00); nil when `text` is not RFC 3339.
    public static func wallTime(ofRFC3339 text: String) -> (date: LocalDate, time: ClockTime)? {
        guard RFC3339.parse(text) != nil else { return nil }
        let b = Array(text.utf8)
        guard b.count >= 16, let date = LocalDate(parsing: String(decoding: b[0..<10], as: UTF8.self)),
            let h = LocalDate.number(b[11..<13]), let m = LocalDate.number(b[14..<16]),
            let time = ClockTime(hour: h, minute: m)
        else { return nil }
        return (date, time)
    }
}
