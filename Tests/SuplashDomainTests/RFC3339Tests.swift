import SuplashDomain
import XCTest

final class RFC3339ParseTests: XCTestCase {
    // 2026-01-15T07:30:00Z
    private let jan15: Int64 = 1_768_462_200_000

    func testUTCDesignatorAndSeparatorInEitherCase() {
        for text in ["2026-01-15T07:30:00Z", "2026-01-15t07:30:00Z", "2026-01-15T07:30:00z", "2026-01-15t07:30:00z"] {
            XCTAssertEqual(RFC3339.parse(text), jan15, text)
        }
    }

    func testOffsetsAreConvertedToUTC() {
        XCTAssertEqual(RFC3339.parse("2026-01-15T10:30:00+03:00"), jan15)
        XCTAssertEqual(RFC3339.parse("2026-01-15T02:00:00-05:30"), jan15)
        XCTAssertEqual(RFC3339.parse("2026-01-15T07:30:00+00:00"), jan15)
        XCTAssertEqual(RFC3339.parse("2026-01-15T07:30:00-00:00"), jan15)
        XCTAssertEqual(RFC3339.parse("2026-01-16T07:29:00+23:59"), jan15, "07:29 on the 16th at +23:59 is 07:30 on the 15th in UTC")
        // An offset that crosses the day, month and year boundary.
        XCTAssertEqual(RFC3339.parse("2000-01-01T02:00:00+03:00"), 946_684_800_000 - 3_600_000)
        XCTAssertEqual(RFC3339.parse("1999-12-31T21:00:00-03:00"), 946_684_800_000)
    }

    func testBadOffsetsAreRejected() {
        for text in [
            "2026-01-15T07:30:00+24:00", "2026-01-15T07:30:00+03:60", "2026-01-15T07:30:00+0300",
            "2026-01-15T07:30:00+03", "2026-01-15T07:30:00+3:00", "2026-01-15T07:30:00 +03:00",
            "2026-01-15T07:30:00+03:00Z", "2026-01-15T07:30:00ZZ", "2026-01-15T07:30:00UTC",
            "2026-01-15T07:30:00GMT+3",
        ] {
            XCTAssertNil(RFC3339.parse(text), text)
        }
    }

    func testMissingOffsetIsRejected() {
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00"))
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.123"))
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.123456789"))
    }

    func testFractionDigitsZeroToNine() {
        let cases: [(String, Int64)] = [
            ("2026-01-15T07:30:00Z", 0),
            ("2026-01-15T07:30:00.1Z", 100),
            ("2026-01-15T07:30:00.12Z", 120),
            ("2026-01-15T07:30:00.123Z", 123),
            ("2026-01-15T07:30:00.1239Z", 123),  // truncated, not rounded
            ("2026-01-15T07:30:00.99999Z", 999),
            ("2026-01-15T07:30:00.000001Z", 0),
            ("2026-01-15T07:30:00.9876543Z", 987),
            ("2026-01-15T07:30:00.12345678Z", 123),
            ("2026-01-15T07:30:00.999999999Z", 999),
            ("2026-01-15T10:30:00.5+03:00", 500),
        ]
        for (text, millis) in cases {
            XCTAssertEqual(RFC3339.parse(text), jan15 + millis, text)
        }
    }

    func testFractionMustHaveOneToNineDigits() {
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.1234567890Z"), "10 digits")
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.Z"), "dot without digits")
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.+03:00"), "dot without digits before an offset")
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00,5Z"), "comma is not a decimal sign in RFC 3339")
        XCTAssertNil(RFC3339.parse("2026-01-15T07:30:00.1a2Z"))
    }

    func testPreEpochFractionsAreAddedForward() {
        XCTAssertEqual(RFC3339.parse("1969-12-31T23:59:59.999Z"), -1)
        XCTAssertEqual(RFC3339.parse("1969-12-31T23:59:59.5Z"), -500)
        XCTAssertEqual(RFC3339.parse("1970-01-01T00:00:00Z"), 0)
    }

    func testCalendarDatesAreChecked() {
        XCTAssertNil(RFC3339.parse("2026-02-29T00:00:00Z"), "2026 is not a leap year")
        XCTAssertEqual(RFC3339.parse("2024-02-29T12:00:00Z"), 1_709_208_000_000)
        XCTAssertNil(RFC3339.parse("1900-02-29T00:00:00Z"), "1900 is not a leap year")
        XCTAssertNotNil(RFC3339.parse("2000-02-29T00:00:00Z"), "2000 is a leap year")
        XCTAssertEqual(RFC3339.parse("1900-03-01T00:00:00Z"), -2_203_891_200_000)
        for text in [
            "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z", "2026-06-31T00:00:00Z", "2026-09-31T00:00:00Z",
            "2026-11-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z",
            "2026-01-32T00:00:00Z", "0000-01-01T00:00:00Z",
        ] {
            XCTAssertNil(RFC3339.parse(text), text)
        }
        for text in [
            "2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z", "2026-12-31T00:00:00Z",
            "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
        ] {
            XCTAssertNotNil(RFC3339.parse(text), text)
        }
    }

    func testTimeOfDayIsChecked() {
        XCTAssertNil(RFC3339.parse("2026-01-15T24:00:00Z"), "hour 24")
        XCTAssertNil(RFC3339.parse("2026-01-15T23:60:00Z"), "minute 60")
        XCTAssertNil(RFC3339.parse("2026-01-15T23:59:61Z"), "second 61")
        XCTAssertNotNil(RFC3339.parse("2026-01-15T23:59:59Z"))
        XCTAssertNotNil(RFC3339.parse("2026-01-15T00:00:00Z"))
    }

    func testLeapSecondIsTheLastMillisecondOfItsMinute() throws {
        let last = try XCTUnwrap(RFC3339.parse("2016-12-31T23:59:59.999Z"))
        XCTAssertEqual(last, 1_483_228_799_999)
        XCTAssertEqual(RFC3339.parse("2016-12-31T23:59:60Z"), last)
        XCTAssertEqual(RFC3339.parse("2016-12-31T23:59:60.5Z"), last)
        XCTAssertEqual(RFC3339.parse("2017-01-01T02:59:60+03:00"), last)
        XCTAssertEqual(RFC3339.parse("2017-01-01T00:00:00Z"), last + 1)
        // The example of RFC 3339 §5.8: the same leap second written in Pacific time.
        XCTAssertEqual(RFC3339.parse("1990-12-31T15:59:60-08:00"), RFC3339.parse("1990-12-31T23:59:60Z"))
        XCTAssertEqual(RFC3339.parse("1990-12-31T23:59:60Z").map(RFC3339.format), "1990-12-31T23:59:59.999Z")
    }

    func testLeapSecondOutsideTheLastUTCMinuteIsRejected() {
        // RFC 3339 §5.7: second 60 only exists in the minute 23:59 UTC.
        for text in [
            "2026-01-15T12:34:60Z", "2016-12-31T23:58:60Z", "2016-12-31T23:59:60+03:00",
            "2017-01-01T00:00:60Z", "2016-12-31T15:59:60+08:00",
        ] {
            XCTAssertNil(RFC3339.parse(text), text)
        }
    }

    func testGarbageIsRejected() {
        let garbage = [
            "", "yesterday", "now", "2026-01-15", "07:30:00Z", "2026-01-15 07:30:00Z", "2026-01-15_07:30:00Z",
            "2026-1-15T07:30:00Z", "2026-01-15T7:30:00Z", "2026-01-15T07:30Z", "2026/01/15T07:30:00Z",
            "26-01-15T07:30:00Z", "+2026-01-15T07:30:00Z", "-2026-01-15T07:30:00Z", "20260115T073000Z",
            " 2026-01-15T07:30:00Z", "2026-01-15T07:30:00Z ", "2026-01-15T07:30:00Z\n", "2026-01-15T07:30:00\u{0}Z",
            "２０２６-01-15T07:30:00Z", "2026-01-15T07:30:00.１Z", "2026-01-15T07:30:00+03:00:00",
            "1768462200000", String(repeating: "9", count: 100),
        ]
        for text in garbage {
            XCTAssertNil(RFC3339.parse(text), text.debugDescription)
        }
    }
}

final class RFC3339FormatTests: XCTestCase {
    func testFormatIsUTCWithMilliseconds() {
        XCTAssertEqual(RFC3339.format(1_795_940_100_000), "2026-11-29T08:15:00.000Z")
        XCTAssertEqual(RFC3339.format(1_768_462_200_123), "2026-01-15T07:30:00.123Z")
        XCTAssertEqual(RFC3339.format(0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.format(1), "1970-01-01T00:00:00.001Z")
        XCTAssertEqual(RFC3339.format(-1), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.format(-1000), "1969-12-31T23:59:59.000Z")
        XCTAssertEqual(RFC3339.format(-1001), "1969-12-31T23:59:58.999Z")
        XCTAssertEqual(RFC3339.format(-86_400_000), "1969-12-31T00:00:00.000Z")
        XCTAssertEqual(RFC3339.format(-2_203_891_200_000), "1900-03-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.format(-62_135_596_800_000), "0001-01-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.format(253_402_300_799_999), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.format(1_709_208_000_000), "2024-02-29T12:00:00.000Z")
    }

    func testOffsetInputIsFormattedAsUTC() throws {
        let millis = try XCTUnwrap(RFC3339.parse("2026-01-15T10:30:00+03:00"))
        XCTAssertEqual(RFC3339.format(millis), "2026-01-15T07:30:00.000Z")
    }

    func testRoundTrip() throws {
        let samples: [Int64] = [
            0, 1, -1, 999, -999, 1000, -1000, 86_399_999, -86_400_001, 946_684_800_000, 1_768_462_200_123,
            1_795_940_100_000, 1_709_208_000_000, -2_203_891_200_000, -62_135_596_800_000, 253_402_300_799_999,
            951_782_400_000,  // 2000-02-29
        ]
        for millis in samples {
            let text = RFC3339.format(millis)
            XCTAssertEqual(text.utf8.count, 24, text)
            XCTAssertEqual(RFC3339.parse(text), millis, text)
        }
        // A sweep of days across several 400-year cycles, with varying times of day.
        var millis: Int64 = -62_135_596_800_000
        while millis < 253_402_300_799_999 {
            let text = RFC3339.format(millis)
            XCTAssertEqual(RFC3339.parse(text), millis, text)
            millis += 86_400_000 * 97 + 3_723_456
        }
    }

    func testCanonicalTextRoundTrips() {
        for text in [
            "2026-11-29T08:15:00.000Z", "2000-01-01T00:00:00.000Z", "1969-07-20T20:17:40.000Z",
            "2024-02-29T23:59:59.999Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
        ] {
            XCTAssertEqual(RFC3339.parse(text).map(RFC3339.format), text)
        }
    }
}

final class CivilDateTests: XCTestCase {
    func testDaysFromCivil() {
        XCTAssertEqual(CivilDate.daysFromCivil(year: 1970, month: 1, day: 1), 0)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 1969, month: 12, day: 31), -1)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 2026, month: 11, day: 29), 20_786)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 1, month: 1, day: 1), -719_162)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 9999, month: 12, day: 31), 2_932_896)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 2000, month: 3, day: 1) - CivilDate.daysFromCivil(year: 2000, month: 2, day: 28), 2)
        XCTAssertEqual(CivilDate.daysFromCivil(year: 2100, month: 3, day: 1) - CivilDate.daysFromCivil(year: 2100, month: 2, day: 28), 1)
    }

    func testCivilFromDaysInvertsDaysFromCivil() {
        XCTAssertTrue(CivilDate.civilFromDays(0) == (1970, 1, 1))
        XCTAssertTrue(CivilDate.civilFromDays(-1) == (1969, 12, 31))
        XCTAssertTrue(CivilDate.civilFromDays(20_786) == (2026, 11, 29))
        XCTAssertTrue(CivilDate.civilFromDays(-719_162) == (1, 1, 1))
        for day in stride(from: -719_162, through: 2_932_896, by: 37) {
            let (y, m, d) = CivilDate.civilFromDays(day)
            XCTAssertTrue(CivilDate.isValid(year: y, month: m, day: d), "\(day)")
            XCTAssertEqual(CivilDate.daysFromCivil(year: y, month: m, day: d), day)
        }
    }

    func testConsecutiveDaysWalkTheCalendar() {
        // Every day of 1999–2001 (two non-leap years and one leap year 2000).
        var expected = (1999, 1, 1)
        let start = CivilDate.daysFromCivil(year: 1999, month: 1, day: 1)
        for day in start..<(start + 365 * 3 + 1) {
            let got = CivilDate.civilFromDays(day)
            XCTAssertTrue(got == expected, "\(got) != \(expected)")
            var (y, m, d) = expected
            d += 1
            if d > CivilDate.daysInMonth(year: y, month: m) {
                d = 1
                m += 1
            }
            if m > 12 {
                m = 1
                y += 1
            }
            expected = (y, m, d)
        }
        XCTAssertTrue(expected == (2002, 1, 1))
    }

    func testDaysInMonth() {
        XCTAssertEqual(
            (1...12).map { CivilDate.daysInMonth(year: 2026, month: $0) },
            [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
        XCTAssertEqual(CivilDate.daysInMonth(year: 2024, month: 2), 29)
        XCTAssertEqual(CivilDate.daysInMonth(year: 2000, month: 2), 29)
        XCTAssertEqual(CivilDate.daysInMonth(year: 1900, month: 2), 28)
        XCTAssertEqual(CivilDate.daysInMonth(year: 2100, month: 2), 28)
    }

    func testIsValid() {
        XCTAssertTrue(CivilDate.isValid(year: 2024, month: 2, day: 29))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 2, day: 29))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 2, day: 30))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 13, day: 1))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 0, day: 1))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 1, day: 0))
        XCTAssertFalse(CivilDate.isValid(year: 2026, month: 1, day: -1))
        XCTAssertFalse(CivilDate.isValid(year: 0, month: 1, day: 1))
        XCTAssertFalse(CivilDate.isValid(year: 10_000, month: 1, day: 1))
        XCTAssertTrue(CivilDate.isValid(year: 1, month: 1, day: 1))
        XCTAssertTrue(CivilDate.isValid(year: 9999, month: 12, day: 31))
    }
}
