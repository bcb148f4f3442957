import SuplashDomain
import XCTest

/// The per-hour drinking buckets smart reminders keep: which buckets an entry write changes and
/// what stored buckets mean for the adaptive curve.
final class HourlyDrinkingBookTests: XCTestCase {
    let berlin = ZoneClocks.shared.clock("Europe/Berlin")

    func d(_ s: String) throws -> LocalDate { try XCTUnwrap(LocalDate(parsing: s)) }
    func at(_ s: String) throws -> Int64 { try XCTUnwrap(RFC3339.parse(s)) }

    func testChangesBucketByLocalHourAndDropOldAndZeroSums() throws {
        let today = try d("2026-10-26")
        let changes = HourlyDrinking.changes(
            [
                (try at("2026-10-25T00:30:00Z"), 200),  // 02:30 CEST, the first pass of the repeated hour
                (try at("2026-10-25T01:30:00Z"), 100),  // 02:30 CET, the second pass: the same bucket
                (try at("2026-10-20T10:00:00Z"), 300), (try at("2026-10-20T10:10:00Z"), -300),  // an edit that cancels out
                (try at("2026-10-11T22:30:00Z"), 50),  // 00:30 on 10-12, the first kept day
                (try at("2026-10-11T21:30:00Z"), 70),  // 23:30 on 10-11: before the window
            ], clock: berlin, today: today)
        XCTAssertEqual(
            changes,
            [
                HourlyDrinking.Bucket(date: try d("2026-10-25"), hour: 2): 300,
                HourlyDrinking.Bucket(date: try d("2026-10-12"), hour: 0): 50,
            ])
        XCTAssertEqual(HourlyDrinking.firstKeptDay(today: today), try d("2026-10-12"))
    }

    func testStoredBucketsSumCompleteDaysOnly() throws {
        let today = try d("2026-10-26")
        let h = HourlyDrinking(
            buckets: [
                (HourlyDrinking.Bucket(date: try d("2026-10-20"), hour: 9), 300),
                (HourlyDrinking.Bucket(date: try d("2026-10-24"), hour: 9), 200),
                (HourlyDrinking.Bucket(date: try d("2026-10-24"), hour: 13), -50),  // drifted below zero
                (HourlyDrinking.Bucket(date: try d("2026-10-26"), hour: 8), 999),  // today: not history yet
                (HourlyDrinking.Bucket(date: try d("2026-10-11"), hour: 8), 999),  // before the window
                (HourlyDrinking.Bucket(date: try d("2026-10-22"), hour: 24), 999),  // no such hour
            ], today: today)
        XCTAssertEqual(h.totalsMl[9], 500)
        XCTAssertEqual(h.totalsMl[13], 0)
        XCTAssertEqual(h.totalsMl.reduce(0, +), 500)
        XCTAssertEqual(h.days, 6)
        XCTAssertEqual(HourlyDrinking(buckets: [], today: today), .none)
    }
}
