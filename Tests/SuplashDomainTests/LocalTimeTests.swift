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
