/// A civil date `YYYY-MM-DD` with no time zone attached (spec §1: local dates are days in
/// the user's profile `timezone`). Ordered, hashable, and convertible to a day number
/// (days since 1970-01-01) for plain integer arithmetic — calendar days, not 24-hour spans.
public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 1–9999.
    public let year: Int
    /// 1–12.
    public let month: Int
    /// 1–31.
    public let day: Int

    /// A valid Gregorian date in years 1–9999, else nil.
    public init?(year: Int, month: Int, day: Int) {
        guard CivilDate.isValid(year: year, month: month, day: day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `dayNumber` days after 1970-01-01.
    public init(dayNumber: Int) {
        let (y, m, d) = CivilDate.civilFromDays(dayNumber)
        self.year = y
        self.month = m
        self.day = d
    }

    /// Parses exactly `YYYY-MM-DD` (ASCII digits); nil for anything else, including
    /// dates that do not exist (`2026-02-30`, `2026-13-01`).
    public init?(parsing text: String) {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == 0x2D, b[7] == 0x2D,
            let y = Self.number(b[0..<4]), let m = Self.number(b[5..<7]), let d = Self.number(b[8..<10])
        else {
            return nil
        }
        self.init(year: y, month: m, day: d)
    }

    static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        var v = 0
        for c in bytes {
            guard c >= 0x30, c <= 0x39 else { return nil }
            v = v * 10 + Int(c - 0x30)
        }
        return v
    }

    /// Days since 1970-01-01 (negative before).
    public var dayNumber: Int { CivilDate.daysFromCivil(year: year, month: month, day: day) }

    /// The date `n` calendar days later (earlier for negative `n`).
    public func adding(days n: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + n) }

    /// 0 = Monday … 6 = Sunday (ISO 8601 weekday − 1).
    public var weekdayFromMonday: Int {
        // 1970-01-01 was a Thursday (index 3).
        ((dayNumber + 3) % 7 + 7) % 7
    }

    /// The Monday of this date's ISO week.
    public var startOfWeek: LocalDate { adding(days: -weekdayFromMonday) }

    /// The first day of this date's month.
    public var startOfMonth: LocalDate { LocalDate(validYear: year, month: month, day: 1) }

    /// The first day of the next month.
    public var startOfNextMonth: LocalDate {
        month == 12 ? LocalDate(validYear: year + 1, month: 1, day: 1) : LocalDate(validYear: year, month: month + 1, day: 1)
    }

    /// The month this date lies in.
    public var yearMonth: YearMonth { YearMonth(validYear: year, month: month) }

    init(validYear: Int, month: Int, day: Int) {
        self.year = validYear
        self.month = month
        self.day = day
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        guard (0...9999).contains(year) else { return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) }
        // `YYYY-MM-DD` written as ten ASCII digits and dashes at once (this runs for every
        // bound date of every write's bookkeeping).
        let digits: [UInt8] = [
            0x30 + UInt8(year / 1000), 0x30 + UInt8(year / 100 % 10), 0x30 + UInt8(year / 10 % 10), 0x30 + UInt8(year % 10),
            0x2D, 0x30 + UInt8(month / 10), 0x30 + UInt8(month % 10), 0x2D, 0x30 + UInt8(day / 10), 0x30 + UInt8(day % 10),
        ]
        return String(decoding: digits, as: UTF8.self)
    }

    /// Calendar order.
    public static func < (a: LocalDate, b: LocalDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }
}

/// A calendar month `YYYY-MM` (a bill's `period`, spec §4 bills).
public struct YearMonth: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 1–9999.
    public let year: Int
    /// 1–12.
    public let month: Int

    /// Parses exactly `YYYY-MM` with a month 01–12 and a year 0001–9999; nil otherwise.
    public init?(parsing text: String) {
        let b = Array(text.utf8)
        guard b.count == 7, b[4] == 0x2D, let y = LocalDate.number(b[0..<4]), let m = LocalDate.number(b[5..<7]),
            (1...9999).contains(y), (1...12).contains(m)
        else { return nil }
        self.year = y
        self.month = m
    }

    init(validYear: Int, month: Int) {
        self.year = validYear
        self.month = month
    }

    /// The month before (nil before 0001-01).
    public var previous: YearMonth? {
        if month > 1 { return YearMonth(validYear: year, month: month - 1) }
        return year > 1 ? YearMonth(validYear: year - 1, month: 12) : nil
    }

    /// The same month one year earlier (nil before year 1).
    public var sameMonthLastYear: YearMonth? { year > 1 ? YearMonth(validYear: year - 1, month: month) : nil }

    /// The month's first day.
    public var firstDay: LocalDate { LocalDate(validYear: year, month: month, day: 1) }

    /// `YYYY-MM`.
    public var description: String { pad(year, 4) + "-" + pad(month, 2) }

    /// Calendar order.
    public static func < (a: YearMonth, b: YearMonth) -> Bool { (a.year, a.month) < (b.year, b.month) }
}

func pad(_ v: Int, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}
