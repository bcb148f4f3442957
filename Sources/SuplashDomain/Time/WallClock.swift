import Foundation

/// A wall-clock time of day, `HH:MM` on a 24-hour clock (spec §4 `wakeTime`, `sleepTime`;
/// §9 `quietStart`, `quietEnd`). No date and no zone: it becomes an instant only together
/// with a local date and a `ZoneClock` (`ZoneClock.instant(of:at:)`).
public struct ClockTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Minutes since local midnight, 0–1439.
    public let minuteOfDay: Int

    /// `hour`:`minute`, nil outside 00:00–23:59.
    public init?(hour: Int, minute: Int) {
        guard (0..<24).contains(hour), (0..<60).contains(minute) else { return nil }
        self.minuteOfDay = hour * 60 + minute
    }

    init(validMinuteOfDay m: Int) { self.minuteOfDay = m }

    /// Parses exactly `HH:MM` (`ProfileValidation.clockTime`); nil for anything else.
    /// (The rule of `ProfileValidation.clockTime`, read from the UTF-8 view without copying it:
    /// every entry write of a user with reminders on parses the wake and sleep times.)
    public init?(parsing text: String) {
        var hour = 0
        var minute = 0
        var index = 0
        for byte in text.utf8 {
            switch index {
            case 2:
                guard byte == 0x3A else { return nil }
            case 0, 1, 3, 4:
                guard (0x30...0x39).contains(byte) else { return nil }
                if index < 2 { hour = hour * 10 + Int(byte - 0x30) } else { minute = minute * 10 + Int(byte - 0x30) }
            default:
                return nil
            }
            index += 1
        }
        guard index == 5 else { return nil }
        self.init(hour: hour, minute: minute)
    }

    /// `HH:MM`.
    public var description: String { pad(minuteOfDay / 60, 2) + ":" + pad(minuteOfDay % 60, 2) }

    /// Earlier in the day first.
    public static func < (a: ClockTime, b: ClockTime) -> Bool { a.minuteOfDay < b.minuteOfDay }
}

extension ZoneClock {
    /// The zone's offset from UTC in seconds at the instant `millis` (ms since the epoch).
    public func offsetSeconds(at millis: Int64) -> Int {
        spans.span(at: floorDiv(millis, 1000)).offset
    }

    /// The instants (ms) around `millis` over which the zone keeps the offset it has at
    /// `millis` (seconds), for callers that walk through time (`ExpectedCurve`): every instant
    /// in `range` has `offsetSeconds(at:)` = `offsetSeconds`.
    func offsetSpan(at millis: Int64) -> (range: Range<Int64>, offsetSeconds: Int) {
        let span = spans.span(at: floorDiv(millis, 1000))
        let limit = Int64.max / 1000
        let start = span.start <= -limit ? Int64.min : span.start * 1000
        let end = span.end >= limit ? Int64.max : span.end * 1000
        return (start..<end, span.offset)
    }

    /// The wall-clock minute of the day (0–1439) that the zone shows at `millis`. During an
    /// autumn repeat both passes of the repeated hour give the same minutes.
    public func wallMinuteOfDay(at millis: Int64) -> Int {
        let seconds = floorDiv(millis, 1000) + Int64(offsetSeconds(at: millis))
        return Int(floorMod(floorDiv(seconds, 60), 1440))
    }

    /// The instant (ms) at which the zone's wall clock shows `time` on local day `date`.
    ///
    /// - A wall time that does not exist (a spring-forward gap) moves to the next valid
    ///   minute: the first instant after the gap (`02:30` on America/New_York 2026-03-08 →
    ///   `03:00` EDT).
    /// - A wall time that exists twice (an autumn repeat) is its first occurrence, the one
    ///   with the summer offset.
    public func instant(of date: LocalDate, at time: ClockTime) -> Int64 {
        instant(wallSeconds: Int64(date.dayNumber) * 86_400 + Int64(time.minuteOfDay) * 60) * 1000
    }

    /// The instant (seconds since the epoch) of the wall time `wall` (seconds since
    /// 1970-01-01T00:00 on the zone's wall clock), with the gap and repeat rules of
    /// `instant(of:at:)`. Offsets lie within −12 h…+14 h, so the instant lies within
    /// `wall − 14 h … wall + 12 h`; the offsets in effect at its ends and its middle are the
    /// candidates (zones change offset at most once in such a span).
    func instant(wallSeconds wall: Int64) -> Int64 {
        // Almost always the zone keeps one offset over the whole span: then that offset is
        // the answer, found with two lookups.
        let earliest = offsetSeconds(at: (wall - 14 * 3600) * 1000)
        if earliest == offsetSeconds(at: (wall + 12 * 3600) * 1000) { return wall - Int64(earliest) }
        let offsets = Set([wall - 14 * 3600, wall - 3600, wall + 12 * 3600].map { offsetSeconds(at: $0 * 1000) })
        let valid = offsets.map { wall - Int64($0) }.filter { t in wall - t == Int64(offsetSeconds(at: t * 1000)) }
        if let first = valid.min() { return first }
        // A gap: the first instant whose wall time is at or after `wall`. Wall time only
        // jumps forward here, so a binary search finds the transition.
        var lo = wall - 16 * 3600  // wall(lo) < wall
        var hi = wall + 14 * 3600  // wall(hi) ≥ wall
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2
            if mid + Int64(offsetSeconds(at: mid * 1000)) >= wall { hi = mid } else { lo = mid }
        }
        return hi
    }
}

func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }
