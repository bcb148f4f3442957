import Foundation
import SuplashDomain
import SuplashJSON
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The store side of the domain collections in sync (spec §5): feed sources served by their
/// `(user_id, change_position)` indexes, bill and day pushes with last-write-wins, goals and
/// achievements recomputed in the push's transaction, and the purge of bill tombstones.
final class SyncDomainStoreTests: XCTestCase {
    var db: SQLiteDatabase?

    override func tearDown() {
        db?.close()
        db = nil
    }

    let now: Int64 = 1_790_000_000_000
    let uid = "01930000-0000-7000-8000-00000000000a"
    let noPatch: @Sendable (JSONValue, UserProfile) throws -> UserProfile = { _, p in p }

    func makeStore() throws -> SQLiteStore {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        let user = UserProfile(id: uid, email: "d@example.test", displayName: nil, now: now)
        _ = try store.createUser(
            user, passwordHash: "x",
            session: NewSession(
                id: "s", userID: uid, refreshTokenHash: [1],
                createdAt: now, refreshExpiresAt: now + 1))
        _ = try store.updateProfile(userID: uid, now: now) { p in
            var p = p
            p.timezone = "Europe/Istanbul"
            p.dailyGoalMl = 1000
            return p
        }
        return store
    }

    func bill(_ period: String, subscriber: String = "555") -> BillContent {
        BillContent(
            provider: "ISKI", subscriberNo: subscriber, period: YearMonth(parsing: period) ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: 12_500, amountMinor: 58_275, dueDate: LocalDate(parsing: "2025-06-20") ?? LocalDate(dayNumber: 0))
    }

    func push(_ store: SQLiteStore, device: String = "b", _ mutations: [SyncMutation]) throws -> [SyncMutationOutcome] {
        try store.applyMutations(userID: uid, deviceID: device, now: now, mutations: mutations, profilePatch: noPatch).outcomes
    }

    func status(_ outcomes: [SyncMutationOutcome]) -> [String] {
        outcomes.map {
            switch $0 {
            case .applied: "applied"
            case .superseded: "superseded"
            case .rejected(let r): r.code
            }
        }
    }

    func testDomainFeedSourcesUseTheirChangesIndexes() throws {
        _ = try makeStore()
        let db = try XCTUnwrap(db)
        let domainSources = SyncFeedSource.allCases.filter { $0 != .profile && $0 != .waterEntries }
        XCTAssertEqual(domainSources.map(\.collection), ["bills", "days", "achievements"])
        for (collection, sql) in domainSources.map({ ($0.collection, $0.sql.sqlite) }) {
            let plan = try db.read { c in
                try c.query("EXPLAIN QUERY PLAN " + sql, [.text("u"), .integer(0), .integer(501), .integer(1)])
            }
            let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
            // achievements holds one row per user: its primary key on user_id is the
            // narrowest index (as users' for the profile source); the others use *_changes.
            let index = collection == "achievements" ? "USING PRIMARY KEY (user_id=?)" : "USING INDEX \(collection)_changes"
            XCTAssertTrue(details.contains(index), "\(collection): \(details)")
            XCTAssertFalse(details.contains("SCAN"), "\(collection): \(details)")
            XCTAssertFalse(details.contains("TEMP B-TREE"), "\(collection): the index must give the order: \(details)")
        }
        // The bill tombstone purge is served by its partial index.
        let plan = try db.read { c in
            try c.query("EXPLAIN QUERY PLAN DELETE FROM bills WHERE deleted = 1 AND updated_at < ?", [.integer(0)])
        }
        let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
        XCTAssertTrue(details.contains("bills_tombstones"), details)
    }

    func testBillPushesLWWUniquenessFeedAndPurge() throws {
        let store = try makeStore()
        let touched = Touched()
        store.changeNotifier.subscribe { touched.add($0) }
        let a = "00000000-0000-4000-8000-0000000000a1"
        let b = "00000000-0000-4000-8000-0000000000b1"
        let c = "00000000-0000-4000-8000-0000000000c1"
        let first = try push(
            store,
            [
                SyncMutation(collection: "bills", id: a, write: .upsertBill(bill("2025-05")), clientUpdatedAt: now - 100),
                SyncMutation(collection: "bills", id: b, write: .upsertBill(bill("2025-05")), clientUpdatedAt: now - 100),
                SyncMutation(collection: "bills", id: a, write: .delete, clientUpdatedAt: now - 200),
                SyncMutation(collection: "bills", id: c, write: .delete, clientUpdatedAt: now - 50),
                SyncMutation(collection: "bills", id: c, write: .upsertBill(bill("2025-06")), clientUpdatedAt: now - 60),
                SyncMutation(collection: "achievements", id: uid, write: .delete, clientUpdatedAt: now - 50),
            ])
        XCTAssertEqual(status(first), ["applied", "bill_exists", "superseded", "applied", "superseded", "read_only_collection"])
        guard case .superseded(.bill(let current))? = first.dropFirst(2).first else { return XCTFail("\(first)") }
        XCTAssertEqual(current.content, bill("2025-05"))
        XCTAssertEqual(current.version, 1)
        guard case .superseded(nil)? = first.dropFirst(4).first else { return XCTFail("the tombstone wins: \(first)") }
        XCTAssertNil(try store.bill(userID: uid, id: c))

        // Equal clocks: the greater device id wins; the same pair again: the later arrival wins.
        let second = try push(
            store, device: "a",
            [
                SyncMutation(collection: "bills", id: a, write: .delete, clientUpdatedAt: now - 100)
            ])
        XCTAssertEqual(status(second), ["superseded"])
        let third = try push(
            store, device: "b",
            [
                SyncMutation(collection: "bills", id: a, write: .delete, clientUpdatedAt: now - 100),
                SyncMutation(collection: "bills", id: b, write: .upsertBill(bill("2025-05")), clientUpdatedAt: now - 100),
            ])
        XCTAssertEqual(status(third), ["applied", "applied"], "the deleted bill's slot is free again")
        XCTAssertNil(try store.bill(userID: uid, id: a))
        XCTAssertEqual(try store.bill(userID: uid, id: b)?.content, bill("2025-05"))

        let feed = try store.changes(userID: uid, after: 0, limit: 100, includeTombstones: true)
        let bills = feed.changes.filter { $0.collection == "bills" }
        XCTAssertEqual(bills.map(\.id), [c, a, b], "commit order, each bill once")
        XCTAssertEqual(bills.map(\.deleted), [true, true, false])
        XCTAssertEqual(bills[1].version, 2)
        XCTAssertEqual(feed.profile?.id, uid)
        let snapshot = try store.changes(userID: uid, after: 0, limit: 100, includeTombstones: false)
        XCTAssertEqual(snapshot.changes.filter { $0.collection == "bills" }.map(\.id), [b])
        // Paging across collections: limit 1 walks every change once.
        var after: Int64 = 0
        var walked: [String] = []
        while true {
            let page = try store.changes(userID: uid, after: after, limit: 1, includeTombstones: true)
            walked += page.changes.map { "\($0.collection)/\($0.id)" }
            guard page.hasMore, let last = page.changes.last else { break }
            after = last.position
        }
        XCTAssertEqual(walked, feed.changes.map { "\($0.collection)/\($0.id)" })

        for _ in 0..<100 where touched.ids.count < 2 { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(Set(touched.ids), [uid])

        let (purged, horizon) = try store.purgeTombstones(deletedBefore: now + 1)
        XCTAssertEqual(purged, 2)
        XCTAssertEqual(horizon, bills[1].position)
        XCTAssertEqual(
            try store.changes(userID: uid, after: 0, limit: 100, includeTombstones: true).changes
                .filter { $0.collection == "bills" }.map(\.id), [b])
    }

    func testDayPushesRecomputeGoalsAndAchievementsLikeTheRESTPut() throws {
        let store = try makeStore()
        // Two goal days (base goal 1000 ml) in Istanbul.
        for (i, day) in ["2026-06-01", "2026-06-02"].enumerated() {
            _ = try store.createEntry(
                userID: uid, id: "00000000-0000-4000-8000-00000000000\(i)",
                content: WaterEntryContent(amountMl: 1000, loggedAt: try XCTUnwrap(RFC3339.parse("\(day)T09:00:00Z"))),
                deviceID: nil, now: now)
        }
        XCTAssertEqual(try store.achievements(userID: uid).longestStreakDays, 2)
        let before = try store.achievements(userID: uid).version
        let hot = DayContextContent(maxTemperatureC: 35)
        let out = try push(
            store,
            [
                SyncMutation(collection: "days", id: "2026-06-02", write: .putDay(hot), clientUpdatedAt: now - 100),
                SyncMutation(collection: "days", id: "2026-06-02", write: .delete, clientUpdatedAt: now - 200),
            ])
        XCTAssertEqual(status(out), ["applied", "superseded"])
        guard case .applied(let change) = out[0], case .superseded(.day(let current)?) = out[1] else { return XCTFail("\(out)") }
        XCTAssertEqual(change.id, "2026-06-02")
        XCTAssertEqual(change.document, .day(current))
        XCTAssertEqual(current.content, hot)
        // The raised goal (1500 ml) breaks the streak, in the same transaction.
        var a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 1)
        XCTAssertEqual(a.daysGoalMet, 1)
        XCTAssertEqual(a.version, before + 1)
        let feed = try store.changes(userID: uid, after: change.position - 1, limit: 10, includeTombstones: true)
        XCTAssertEqual(feed.changes.map(\.collection), ["days", "achievements"])
        XCTAssertEqual(feed.changes.last?.id, uid)
        XCTAssertEqual(feed.changes.last?.document, .achievements(a))

        // A newer delete clears the context (the day stays, both fields null): the streak is back.
        let cleared = try push(
            store, device: "c",
            [
                SyncMutation(collection: "days", id: "2026-06-02", write: .delete, clientUpdatedAt: now - 50)
            ])
        guard case .applied(let clearedChange) = cleared[0] else { return XCTFail("\(cleared)") }
        XCTAssertFalse(clearedChange.deleted)
        guard case .day(let day)? = clearedChange.document else { return XCTFail("a day document") }
        XCTAssertEqual(day.content, DayContextContent())
        XCTAssertEqual(day.version, 2)
        a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 2)
        XCTAssertEqual(a.daysGoalMet, 2)
        // A REST PUT afterwards supersedes it (stamped after the stored clock).
        _ = try store.putDay(userID: uid, date: try XCTUnwrap(LocalDate(parsing: "2026-06-02")), content: hot, deviceID: nil, now: now - 10_000)
        let late = try push(
            store, device: "z",
            [
                SyncMutation(collection: "days", id: "2026-06-02", write: .delete, clientUpdatedAt: now - 50)
            ])
        XCTAssertEqual(status(late), ["superseded"])
    }
}
