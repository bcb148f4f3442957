import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// A paged full snapshot lists live documents only, on every page (spec §5), on SQLite and
/// PostgreSQL alike: the later pages of a snapshot ask for tombstones after the snapshot's
/// start, so deletes made before it began never show, and a delete made while it is paged
/// (of a document an earlier page may have listed) does.
final class PagedSnapshotTests: XCTestCase {
    typealias Store = AccountAndEntryStore & SyncRepository & BillRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func testPagedSnapshotListsNoTombstonesOnSQLite() throws { try checkPagedSnapshot(try fixtures.sqliteStore().0) }

    func testPagedSnapshotListsNoTombstonesOnPostgres() throws {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        try checkPagedSnapshot(try fixtures.postgresStore().0)
    }

    func checkPagedSnapshot(_ store: Store) throws {
        let uid = fixtures.alice
        let t0 = fixtures.t0
        try fixtures.makeUsers(store)
        func content(_ ml: Int) -> WaterEntryContent {
            WaterEntryContent(amountMl: ml, loggedAt: t0, source: .phone, healthKitUUID: nil, note: nil)
        }
        // Live and deleted entries interleaved, then a deleted bill: tombstones spread over
        // every page of a snapshot paged one change at a time.
        for i in 0..<8 {
            _ = try store.createEntry(userID: uid, id: "e\(i)", content: content(100 + i), deviceID: "d", now: t0 + Int64(i))
        }
        for i in [1, 3, 6] {
            try store.deleteEntry(userID: uid, id: "e\(i)", deviceID: "d", now: t0 + 100, precondition: { _ in true })
        }
        let bill = BillContent(
            provider: "ISKI", subscriberNo: "S-1", period: YearMonth(parsing: "2026-05") ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 1_000, amountMinor: 500,
            dueDate: LocalDate(parsing: "2026-06-10") ?? LocalDate(dayNumber: 0))
        _ = try store.createBill(userID: uid, id: "b1", content: bill, deviceID: "d", now: t0 + 200)
        try store.deleteBill(userID: uid, id: "b1", deviceID: "d", now: t0 + 201, precondition: { _ in true })
        _ = try store.createEntry(userID: uid, id: "e8", content: content(200), deviceID: "d", now: t0 + 300)

        // The first page (no tombstones at all) fixes the snapshot's start.
        let first = try store.changes(userID: uid, after: 0, limit: 1, tombstonesAfter: Int64.max)
        let start = first.headPosition
        var listed = first.changes
        var after = first.changes.last?.position ?? 0
        var more = first.hasMore
        var pages = 1
        // A delete while the snapshot is paged (the first page may have listed e0).
        try store.deleteEntry(userID: uid, id: "e0", deviceID: "d", now: t0 + 400, precondition: { _ in true })
        while more {
            let page = try store.changes(userID: uid, after: after, limit: 1, tombstonesAfter: start)
            listed += page.changes
            after = page.changes.last?.position ?? after
            more = page.hasMore
            pages += 1
            XCTAssertLessThan(pages, 50, "the snapshot must end")
            if pages >= 50 { break }
        }
        let entries = listed.filter { $0.collection == "water_entries" }
        var applied: [String: Bool] = [:]
        for change in entries { applied[change.id] = !change.deleted }
        XCTAssertEqual(applied.filter(\.value).keys.sorted(), ["e2", "e4", "e5", "e7", "e8"])
        XCTAssertEqual(
            entries.filter(\.deleted).map(\.id), ["e0"],
            "only the delete made after the snapshot began shows as a tombstone")
        XCTAssertFalse(listed.contains { $0.collection == "bills" }, "a bill deleted before the snapshot is not listed")
        XCTAssertGreaterThan(pages, 5, "the snapshot was paged")

        // An incremental pull still lists every tombstone; the boolean form is the same query.
        let feed = try store.changes(userID: uid, after: 0, limit: 100, tombstonesAfter: 0)
        XCTAssertEqual(feed.changes.filter(\.deleted).map(\.id).sorted(), ["b1", "e0", "e1", "e3", "e6"])
        XCTAssertEqual(try store.changes(userID: uid, after: 0, limit: 100, includeTombstones: false).changes.filter(\.deleted), [])
    }
}
