/// RFC 3339 §5.6 timestamps, parsed exactly and formatted canonically (spec §1).
///
/// Instants are represented as milliseconds since the Unix epoch (`Int64`, UTC), which is
/// the precision the API stores and returns.
public enum RFC3339 {
    /// Parses `date-time` from RFC 3339 §5.6: `YYYY-MM-DD` `T`|`t` `HH:MM:SS` optional
    /// `.` + 1–9 fraction digits (digits past milliseconds are truncated), then `Z`|`z`
    /// or `±HH:MM`. Returns milliseconds since the epoch, or nil for anything else
    /// (including impossible calendar dates such as `2026-02-30`).
    /// A leap second (`:60`) is accepted only where RFC 3339 §5.7 allows one — in the
    /// minute 23:59 UTC (after applying the offset) — and is read as the last millisecond
    /// of that minute.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.count <= 64 else { return nil }
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 0x30, c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2) else { return nil }
        guard i < b.count, b[i] == 0x54 || b[i] == 0x74 else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), var second = digits(2) else { return nil }
        guard CivilDate.isValid(year: year, month: month, day: day), hour < 24, minute < 60, second <= 60 else { return nil }
        var millis = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if count < 3 { millis = millis * 10 + Int(b[i] - 0x30) }
                count += 1
                i += 1
            }
            guard count >= 1, count <= 9 else { return nil }
            if count < 3 {
                for _ in count..<3 { millis *= 10 }
            }
        }
        let leapSecond = second == 60
        if leapSecond {
            second = 59
            millis = 999
        }
        guard i < b.count else { return nil }
        var offsetMinutes = 0
        switch b[i] {
        case 0x5A, 0x7A:
            i += 1
        case 0x2B, 0x2D:
            let sign = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh < 24, om < 60 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        default:
            return nil
        }
        guard i == b.count else { return nil }
        if leapSecond {
            let utcMinuteOfDay = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
            guard utcMinuteOfDay == 23 * 60 + 59 else { return nil }
        }
        let days = CivilDate.daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        let instant = seconds * 1000 + Int64(millis)
        // Offsets can push an edge date outside years 1–9999, which `format` cannot write.
        guard instant >= minimumMillis, instant <= maximumMillis else { return nil }
        return instant
    }

    /// 0001-01-01T00:00:00.000Z.
    public static let minimumMillis: Int64 = -62_135_596_800_000
    /// 9999-12-31T23:59:59.999Z.
    public static let maximumMillis: Int64 = 253_402_300_799_999

    /// Formats milliseconds since the epoch as `2026-11-29T08:15:00.000Z` (UTC, always milliseconds).
    public static func format(_ millis: Int64) -> String {
        var ms = millis % 1000
        var secs = millis / 1000
        if ms < 0 {
            ms += 1000
            secs -= 1
        }
        var days = secs / 86_400
        var rem = secs % 86_400
        if rem < 0 {
            rem += 86_400
            days -= 1
        }
        let (y, m, d) = CivilDate.civilFromDays(Int(days))
        let hh = Int(rem / 3600)
        let mm = Int(rem % 3600 / 60)
        let ss = Int(rem % 60)
        // Written in place (no intermediate arrays: this runs for every timestamp presented).
        return String(unsafeUninitializedCapacity: 24) { out in
            var i = 0
            func put(_ v: Int, _ width: Int) {
                var x = v
                var k = i + width - 1
                while k >= i {
                    out[k] = UInt8(truncatingIfNeeded: 0x30 + x % 10)
                    x /= 10
                    k -= 1
                }
                i += width
            }
            func put(byte b: UInt8) {
                out[i] = b
                i += 1
            }
            put(y, 4)
            put(byte: 0x2D)
            put(m, 2)
            put(byte: 0x2D)
            put(d, 2)
            put(byte: 0x54)
            put(hh, 2)
            put(byte: 0x3A)
            put(mm, 2)
            put(byte: 0x3A)
            put(ss, 2)
            put(byte: 0x2E)
            put(Int(ms), 3)
            put(byte: 0x5A)
            return i
        }
    }
}

/// Proleptic Gregorian calendar arithmetic (H. Hinnant's days-from-civil algorithms).
public enum CivilDate {
    /// Days since 1970-01-01 for the given civil date.
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date (year, month 1–12, day 1–31) of a day count since 1970-01-01.
    public static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// True when `year-month-day` exists in the Gregorian calendar (years 1–9999).
    public static func isValid(year: Int, month: Int, day: Int) -> Bool {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return false }
        return day <= daysInMonth(year: year, month: month)
    }

    /// 28–31.
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
