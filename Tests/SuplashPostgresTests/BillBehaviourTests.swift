import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Bills behave alike on SQLite and PostgreSQL: one scenario, the same transcript.
final class BillBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & BillRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func scenario(_ store: Store) throws -> [String] {
        let uid = fixtures.alice
        let t0 = fixtures.t0
        try fixtures.makeUsers(store)
        var transcript: [String] = []
        func record(_ label: String, _ body: () throws -> Any) {
            do {
                transcript.append("\(label): \(try body())")
            } catch {
                transcript.append("\(label): threw \(error)")
            }
        }
        func month(_ text: String) -> YearMonth { YearMonth(parsing: text) ?? LocalDate(dayNumber: 0).yearMonth }
        func day(_ text: String) -> LocalDate { LocalDate(parsing: text) ?? LocalDate(dayNumber: 0) }
        func bill(_ period: String, amount: Int64, due: String, subscriber: String = "S-1", paid: Int64? = nil) -> BillContent {
            BillContent(
                provider: "ISKI", subscriberNo: subscriber, period: month(period), consumptionMilliM3: 12_345,
                amountMinor: amount, dueDate: day(due), paidAt: paid)
        }
        let jan = bill("2026-01", amount: 10_000, due: "2026-02-10")
        record("create jan") { try store.createBill(userID: uid, id: "b1", content: jan, deviceID: "phone", now: t0) }
        record("re-post jan") { try store.createBill(userID: uid, id: "b1", content: jan, deviceID: "phone", now: t0 + 1) }
        record("other content same id") {
            try store.createBill(userID: uid, id: "b1", content: bill("2026-01", amount: 1, due: "2026-02-10"), deviceID: nil, now: t0 + 1)
        }
        record("same month other id") { try store.createBill(userID: uid, id: "b9", content: jan, deviceID: nil, now: t0 + 1) }
        record("unknown user") { try store.createBill(userID: "nobody", id: "b1", content: jan, deviceID: nil, now: t0) }
        for (i, period) in ["2026-02", "2026-03", "2026-04"].enumerated() {
            record("create \(period)") {
                try store.createBill(
                    userID: uid, id: "b\(i + 2)", content: bill(period, amount: 10_000 + Int64(i), due: "\(period)-20"),
                    deviceID: nil, now: t0 + 10)
            }
        }
        record("other subscriber") {
            try store.createBill(
                userID: uid, id: "c1", content: bill("2026-03", amount: 5, due: "2026-03-01", subscriber: "S-2"),
                deviceID: nil, now: t0 + 11)
        }
        record("get") { try store.bill(userID: uid, id: "b2") as Any }
        record("precondition") {
            try store.updateBill(userID: uid, id: "b2", deviceID: nil, now: t0 + 20, precondition: { $0.version == 5 }) { $0 }
        }
        record("pay") {
            try store.updateBill(userID: uid, id: "b2", deviceID: "phone", now: t0 + 20, precondition: { $0.version == 1 }) { c in
                var c = c
                c.paidAt = t0 + 20
                return c
            }
        }
        record("move onto a taken month") {
            try store.updateBill(userID: uid, id: "b3", deviceID: nil, now: t0 + 21, precondition: { _ in true }) { c in
                var c = c
                c.period = YearMonth(parsing: "2026-02") ?? c.period
                return c
            }
        }
        record("delete") { try store.deleteBill(userID: uid, id: "b4", deviceID: nil, now: t0 + 30, precondition: { _ in true }) }
        record("delete again") { try store.deleteBill(userID: uid, id: "b4", deviceID: nil, now: t0 + 31, precondition: { _ in true }) }
        record("re-create deleted") {
            try store.createBill(userID: uid, id: "b4", content: bill("2026-04", amount: 1, due: "2026-04-20"), deviceID: nil, now: t0 + 32)
        }
        record("month free after delete") {
            try store.createBill(userID: uid, id: "b5", content: bill("2026-04", amount: 2, due: "2026-04-21"), deviceID: nil, now: t0 + 33)
        }
        var cursor: BillCursor?
        var pages: [[String]] = []
        repeat {
            let page = try store.listBills(userID: uid, after: cursor, limit: 2)
            pages.append(page.map(\.id))
            cursor = page.count == 2 ? page.last.map { BillCursor(period: $0.content.period, id: $0.id) } : nil
        } while cursor != nil
        transcript.append("pages: \(pages)")
        record("by subscription") {
            try store.bill(userID: uid, provider: "ISKI", subscriberNo: "S-1", period: month("2026-03")) as Any
        }
        record("latest") { try store.latestBills(userID: uid, provider: "ISKI", subscriberNo: "S-1", limit: 2).map(\.id) }
        record("unpaid") { try store.unpaidBills(userID: uid, dueThrough: day("2026-03-31")).map(\.id) }
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try fixtures.sqliteStore().0)
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("re-post jan: existing") }, "\(sqlite)")
        XCTAssertTrue(sqlite.contains { $0.hasPrefix("pages: [[\"b5\", \"c1\"], [\"b3\", \"b2\"], [\"b1\"]]") }, "\(sqlite)")
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try fixtures.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }
}
