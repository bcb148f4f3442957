import Foundation

/// Local-day arithmetic in an IANA time zone through Foundation's `Calendar` and
/// `TimeZone` (design notes, "Time"). Day boundaries are computed by the calendar,
/// never assumed to be 24 hours apart: in Europe/Berlin 2026-03-29 lasts 23 hours and
/// 2026-10-25 lasts 25.
///
/// Instants are milliseconds since the Unix epoch (UTC).
public struct ZoneClock: Sendable {
    /// The IANA id the clock was made for, as stored in the profile.
    public let timeZoneID: String
    let calendar: Calendar

    /// A clock for `timeZoneID`, or nil when Foundation does not know the id.
    public init?(timeZoneID: String) {
        guard let zone = TimeZone(identifier: timeZoneID) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        self.timeZoneID = timeZoneID
        self.calendar = calendar
    }

    /// The local date containing the instant `millis`: the UTC instant moved by the zone's
    /// offset at that instant (one offset lookup; `Calendar.dateComponents` costs far more and
    /// this runs in every write's bookkeeping).
    public func localDate(of millis: Int64) -> LocalDate {
        let wall = floorDiv(millis, 1000) + Int64(offsetSeconds(at: millis))
        return LocalDate(dayNumber: Int(floorDiv(wall, 86_400)))
    }

    /// The first instant (ms) of local day `date`: local midnight, or the first instant
    /// after a transition that skips midnight (`instant(wallSeconds:)`'s gap rule; a
    /// midnight that happens twice is its first occurrence). Equal to Foundation's
    /// `Calendar.startOfDay` (tested over several zones' transitions).
    public func startOfDay(_ date: LocalDate) -> Int64 {
        instant(wallSeconds: Int64(date.dayNumber) * 86_400) * 1000
    }

    /// `[start, end)` of local day `date` in ms; `end - start` is 23, 24 or 25 hours
    /// (or whatever the zone's rules say).
    public func dayRange(_ date: LocalDate) -> Range<Int64> {
        startOfDay(date)..<startOfDay(date.adding(days: 1))
    }

    /// `[start of from, end of to)` in ms — a local-date range as one UTC instant range.
    public func range(from: LocalDate, through to: LocalDate) -> Range<Int64> {
        startOfDay(from)..<startOfDay(to.adding(days: 1))
    }

    /// Today in this zone at instant `now` (ms).
    public func today(now: Int64) -> LocalDate { localDate(of: now) }
}

/// A cache of one `ZoneClock` per zone id (design notes: "cache one per zone"). Safe to
/// share between threads.
public final class ZoneClocks: @unchecked Sendable {
    // Guarded by `lock`.
    private var clocks: [String: ZoneClock] = [:]
    private let lock = NSLock()

    public init() {}

    /// The clock of `timeZoneID`; an id Foundation does not know (only possible for data
    /// written before validation) falls back to UTC.
    public func clock(_ timeZoneID: String) -> ZoneClock {
        if let cached = lock.withLock({ clocks[timeZoneID] }) { return cached }
        let clock = ZoneClock(timeZoneID: timeZoneID) ?? ZoneClock(utcNamed: timeZoneID)
        lock.withLock {
            if clocks.count < 1024 { clocks[timeZoneID] = clock }
        }
        return clock
    }

    /// A process-wide cache for callers without their own (the storage adapter).
    public static let shared = ZoneClocks()
}

extension ZoneClock {
    init(utcNamed id: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        self.timeZoneID = id
        self.calendar = calendar
    }
}
