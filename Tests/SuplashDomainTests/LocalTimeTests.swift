import Foundation
import SuplashDomain
import XCTest

/// Local dates and day boundaries in IANA zones (design notes "Time").
final class LocalTimeTests: XCTestCase {
    func testParsingAndArithmetic() throws {
        XCTAssertNil(LocalDate(parsing: "2026-02-30"))
        XCTAssertNil(LocalDate(parsing: "2026-13-01"))
        XCTAssertNil(LocalDate(parsing: "20-11-2026"))
        XCTAssertNil(LocalDate(parsing: "2026-1-01"))
        let d = try XCTUnwrap(LocalDate(parsing: "2024-02-28"))
        XCTAssertEqual(d.adding(days: 1).description, "2024-02-29")
        XCTAssertEqual(d.adding(days: 2).description, "2024-03-01")
        XCTAssertEqual(try XCTUnwrap(LocalDate(parsing: "2026-06-01")).weekdayFromMonday, 0)  // a Monday
        XCTAssertEqual(try XCTUnwrap(LocalDate(parsing: "2026-06-14")).startOfWeek.description, "2026-06-08")
        XCTAssertEqual(try XCTUnwrap(LocalDate(parsing: "2026-12-14")).startOfNextMonth.description, "2027-01-01")
        XCTAssertEqual(YearMonth(parsing: "2026-01")?.previous?.description, "2025-12")
        XCTAssertEqual(YearMonth(parsing: "2026-10")?.sameMonthLastYear?.description, "2025-10")
        XCTAssertNil(YearMonth(parsing: "2026-13"))
        XCTAssertNil(YearMonth(parsing: "2026-00"))
    }

    /// `ZoneClock` does its own offset arithmetic: it must agree with Foundation's calendar on
    /// every day boundary and local date, across zones whose transitions fall at midnight
    /// (Santiago, Beirut, Havana), by 30 minutes (Lord Howe), at :45 (Chatham) or never.
    func testDayBoundariesAndLocalDatesAgreeWithFoundationsCalendar() throws {
        let zones = [
            "Europe/Berlin", "America/New_York", "America/Santiago", "Asia/Beirut", "America/Havana",
            "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata", "Europe/Istanbul", "UTC",
        ]
        let first = try XCTUnwrap(LocalDate(parsing: "2025-01-01"))
        for id in zones {
            let clock = try XCTUnwrap(ZoneClock(timeZoneID: id))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = try XCTUnwrap(TimeZone(identifier: id))
            for n in 0..<(3 * 366) {
                let day = first.adding(days: n)
                let noon = try XCTUnwrap(
                    calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: 12)))
                let expected = Int64((calendar.startOfDay(for: noon).timeIntervalSince1970 * 1000).rounded())
                XCTAssertEqual(clock.startOfDay(day), expected, "\(id) \(day)")
                // Local dates every 37 minutes around the start of the day.
                for step in -4...4 {
                    let t = expected + Int64(step) * 37 * 60_000
                    let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(t) / 1000))
                    XCTAssertEqual(
                        clock.localDate(of: t).description, LocalDate(year: c.year ?? 0, month: c.month ?? 0, day: c.day ?? 0)?.description,
                        "\(id) \(t)")
                }
            }
        }
    }

    /// `ZoneClock` remembers the spans between a zone's transitions: its offsets must stay
    /// Foundation's at every instant, asked out of order (the spans are found from any instant,
    /// forwards and backwards), in zones with summer time, with standard-offset changes and
    /// summer time abolished (Istanbul 2016, Moscow 2011 and 2014, São Paulo 2019, Samoa's
    /// skipped day in 2011) and around each transition's second.
    func testRememberedOffsetsAgreeWithFoundation() throws {
        let zones = [
            "Europe/Berlin", "America/New_York", "Europe/Istanbul", "Europe/Moscow", "America/Sao_Paulo", "Pacific/Apia",
            "Australia/Lord_Howe", "Asia/Kolkata", "UTC",
        ]
        let from: Int64 = 1_262_304_000  // 2010-01-01
        let to: Int64 = 1_830_297_600  // 2028-01-01
        for id in zones {
            let clock = try XCTUnwrap(ZoneClock(timeZoneID: id))
            let zone = try XCTUnwrap(TimeZone(identifier: id))
            func expected(_ s: Int64) -> Int { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(s))) }
            // Every 13 h 12 min, in a scrambled order.
            var instants = Array(stride(from: from, to: to, by: 47_520))
            instants = instants.enumerated().map { instants[($0.offset * 7_919) % instants.count] }
            for s in instants { XCTAssertEqual(clock.offsetSeconds(at: s * 1000), expected(s), "\(id) \(s)") }
            // A second either side of each transition.
            var t = Date(timeIntervalSince1970: Double(from))
            while let next = zone.nextDaylightSavingTimeTransition(after: t), next.timeIntervalSince1970 < Double(to) {
                let s = Int64(next.timeIntervalSince1970)
                for d: Int64 in [-1, 0, 1] {
                    XCTAssertEqual(clock.offsetSeconds(at: (s + d) * 1000), expected(s + d), "\(id) \(s + d)")
                    XCTAssertEqual(clock.offsetSeconds(at: (s + d) * 1000 + 999), expected(s + d), "\(id) \(s + d).999")
                }
                t = next
            }
        }
    }

    func testBerlinSpringForwardDayIs23Hours() throws {
        let berlin = try XCTUnwrap(ZoneClock(timeZoneID: "Europe/Berlin"))
        let day = try XCTUnwrap(LocalDate(parsing: "2026-03-29"))
        let r = berlin.dayRange(day)
        XCTAssertEqual(r.upperBound - r.lowerBound, 23 * 3_600_000)
        XCTAssertEqual(r.lowerBound, try XCTUnwrap(RFC3339.parse("2026-03-28T23:00:00Z")))
        let fall = berlin.dayRange(try XCTUnwrap(LocalDate(parsing: "2026-10-25")))
        XCTAssertEqual(fall.upperBound - fall.lowerBound, 25 * 3_600_000)
        // 23:30 CET on the 28th, 00:30 CET on the 29th, 23:30 CEST on the 29th, 00:30 CEST on the 30th.
        XCTAssertEqual(berlin.localDate(of: try XCTUnwrap(RFC3339.parse("2026-03-28T22:30:00Z"))).description, "2026-03-28")
        XCTAssertEqual(berlin.localDate(of: try XCTUnwrap(RFC3339.parse("2026-03-28T23:30:00Z"))).description, "2026-03-29")
        XCTAssertEqual(berlin.localDate(of: try XCTUnwrap(RFC3339.parse("2026-03-29T21:30:00Z"))).description, "2026-03-29")
        XCTAssertEqual(berlin.localDate(of: try XCTUnwrap(RFC3339.parse("2026-03-29T22:30:00Z"))).description, "2026-03-30")
    }

    func testIstanbulAndLosAngeles() throws {
        let ist = ZoneClocks.shared.clock("Europe/Istanbul")
        XCTAssertEqual(
            ist.dayRange(try XCTUnwrap(LocalDate(parsing: "2026-06-01"))).lowerBound,
            try XCTUnwrap(RFC3339.parse("2026-05-31T21:00:00Z")))
        let la = ZoneClocks.shared.clock("America/Los_Angeles")
        XCTAssertEqual(la.localDate(of: try XCTUnwrap(RFC3339.parse("2026-03-10T06:00:00Z"))).description, "2026-03-09")
        // 2026-03-08 is 23 hours long in Los Angeles.
        let r = la.dayRange(try XCTUnwrap(LocalDate(parsing: "2026-03-08")))
        XCTAssertEqual(r.upperBound - r.lowerBound, 23 * 3_600_000)
        XCTAssertEqual(ZoneClocks.shared.clock("Europe/Kiev").timeZoneID, "Europe/Kiev")
    }
}
