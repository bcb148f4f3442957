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
    /// The zone's offsets over the spans between its transitions, shared by the copies of
    /// this clock (`offsetSeconds(at:)`).
    let spans: OffsetSpans

    /// A clock for `timeZoneID`, or nil when Foundation does not know the id.
    public init?(timeZoneID: String) {
        guard let zone = TimeZone(identifier: timeZoneID) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        self.timeZoneID = timeZoneID
        self.calendar = calendar
        self.spans = OffsetSpans(zone: zone)
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
        self.spans = OffsetSpans(zone: calendar.timeZone)
    }
}

/// The spans of time over which a zone keeps one offset, remembered for `ZoneClock.offsetSeconds(at:)`:
/// an offset lookup through Foundation's `TimeZone` costs about a thousand instructions and the
/// write path makes a dozen, while a span between two transitions (months long) answers all of
/// them. A span is found from the zone's own transitions (`nextDaylightSavingTimeTransition`,
/// which reports every change of offset, standard-time changes included) and checked at both
/// ends; a span that fails the check is one second long. Keeps the 8 latest spans. Safe to
/// share between threads.
final class OffsetSpans: @unchecked Sendable {
    struct Span {
        /// `[start, end)` in seconds since the epoch.
        var start: Int64
        var end: Int64
        var offset: Int
    }

    let zone: TimeZone
    // Guarded by `lock`.
    private var spans: [Span] = []
    private let lock = NSLock()

    init(zone: TimeZone) { self.zone = zone }

    /// The span holding `seconds` (seconds since the epoch).
    func span(at seconds: Int64) -> Span {
        if let hit = lock.withLock({ spans.first { $0.start <= seconds && seconds < $0.end } }) { return hit }
        let span = Self.span(containing: seconds, zone: zone)
        lock.withLock {
            if spans.count >= 8 { spans.removeFirst() }
            spans.append(span)
        }
        return span
    }

    /// How far back from an instant the start of its span is looked for (and how far ahead its
    /// end, when the zone has no later transition), seconds.
    static let lookBack: Int64 = 183 * 86_400

    static func span(containing t: Int64, zone: TimeZone) -> Span {
        func offset(_ s: Int64) -> Int { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(s))) }
        func next(after s: Int64) -> Int64? {
            zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: Double(s))).map {
                Int64(($0.timeIntervalSince1970).rounded(.up))
            }
        }
        let value = offset(t)
        var start = t - lookBack
        var steps = 0
        while let n = next(after: start), n <= t, n > start, steps < 16 {
            start = n
            steps += 1
        }
        // No later transition: the span still ends `lookBack` ahead, so that its end is checked
        // like any other and a long-lived span is found again now and then.
        let end = next(after: t).map { max($0, t + 1) } ?? t + lookBack
        let checked = steps < 16 && offset(start) == value && offset(end - 1) == value
        return checked ? Span(start: start, end: end, offset: value) : Span(start: t, end: t + 1, offset: value)
    }
}
