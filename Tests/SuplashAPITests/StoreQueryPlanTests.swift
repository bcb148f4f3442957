import Foundation
import SuplashDomain
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The SQLite adapter's queries use their indexes (every list is served by an index, not a
/// scan or OFFSET), and writes go through the fsync'd writer.
final class StoreQueryPlanTests: XCTestCase {
    func makeStore() throws -> (SQLiteStore, SQLiteDatabase) {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        return (SQLiteStore(database: db), db)
    }

    func testEntryListUsesTheListIndex() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        let plan = try db.read { c in
            try c.query(
                "EXPLAIN QUERY PLAN " + EntryStatements.listSQL.sqlite,
                [.text("u"), .integer(0), .integer(Int64.max), .integer(Int64.max), .text("z"), .integer(21)])
        }
        let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
        XCTAssertTrue(details.contains("water_entries_list"), details)
        XCTAssertFalse(details.contains("SCAN"), details)
        XCTAssertFalse(details.contains("TEMP B-TREE"), "the index must give the order: \(details)")
    }

    /// The push claim reads due rows in its order from `push_outbox_due` (no sort of every
    /// due row per claim: a backlog drains in linear time).
    func testPushClaimUsesTheDueIndexForItsOrder() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        let plan = try db.read { c in
            try c.query(
                "EXPLAIN QUERY PLAN " + PushSQL.claim.statement.sqlite, [.integer(1), .integer(2), .integer(100)])
        }
        let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
        XCTAssertTrue(details.contains("push_outbox_due"), details)
        XCTAssertFalse(details.contains("TEMP B-TREE"), "the index must give the order: \(details)")
    }

    /// The retention purges (Apple account events, ended revoke jobs, expired code mail, ended
    /// pushes) read
    /// their indexes, never the whole table.
    func testRetentionPurgesUseTheirIndexes() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        for (statement, index, arguments) in [
            (AppleLifecycleSQL.forgetOldEvents, "apple_notifications_received", [SQLValue.integer(1)]),
            (AppleLifecycleSQL.purgeJobs, "apple_revoke_jobs_ended", [.integer(1)]),
            (OutboxSQL.dropExpired, "outbox_expires", [.integer(1)]),
            (PushSQL.purge, "push_outbox_done", [.integer(1), .integer(1000)]),
        ] {
            let plan = try db.read { c in try c.query("EXPLAIN QUERY PLAN " + statement.sqlite, arguments) }
            let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
            XCTAssertTrue(details.contains(index), details)
            XCTAssertFalse(details.contains("SCAN"), details)
        }
    }

    /// The reminder recompute's reads (every entry write of a user with reminders on) are
    /// served in index order: no temporary B-tree to group the hourly history or to order the
    /// history by due time and id.
    func testReminderRecomputeReadsNeedNoSort() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        for (statement, args, index) in [
            (
                ReminderSQL.planDays,
                [SQLValue.text("u"), .text("2026-01-01"), .text("2026-01-15"), .text("2026-01-15"), .text("2026-01-16")],
                "drinking_hours_by_hour"
            ),
            (
                ReminderSQL.planDays,
                [SQLValue.text("u"), .text("2026-01-01"), .text("2026-01-15"), .text("2026-01-15"), .text("2026-01-16")],
                "SEARCH drinking_hours USING PRIMARY KEY"
            ),
            (ReminderSQL.history, [.text("u"), .integer(50)], "reminders_history"),
        ] {
            let plan = try db.read { c in try c.query("EXPLAIN QUERY PLAN " + statement.sqlite, args) }
            let details = plan.map { String(describing: $0["detail"]) }.joined(separator: "\n")
            XCTAssertTrue(details.contains(index), details)
            XCTAssertFalse(details.contains("SCAN"), details)
            XCTAssertFalse(details.contains("TEMP B-TREE"), "the index must give the order: \(details)")
        }
    }

    func testWriterIsDurable() throws {
        let (_, db) = try makeStore()
        defer { db.close() }
        let synchronous = try db.write { ctx in try ctx.connection.scalarInt64("PRAGMA synchronous") }
        XCTAssertEqual(synchronous, 2, "synchronous=FULL: every commit is fsync'd before it is acknowledged")
        let mode = try db.write { ctx in try ctx.connection.scalar("PRAGMA journal_mode") }
        XCTAssertEqual(mode, .text("wal"))
    }

    func testKeysetPagingThroughTheAdapter() throws {
        let (store, db) = try makeStore()
        defer { db.close() }
        let now: Int64 = 1_790_000_000_000
        let user = UserProfile(id: "01930000-0000-7000-8000-000000000001", email: "a@example.test", displayName: nil, now: now)
        _ = try store.createUser(
            user, passwordHash: "x",
            session: NewSession(
                id: "s", userID: user.id, refreshTokenHash: [1],
                createdAt: now, refreshExpiresAt: now + 1))
        for i in 0..<25 {
            let id = String(format: "00000000-0000-4000-8000-%012d", i)
            _ = try store.createEntry(
                userID: user.id, id: id,
                content: WaterEntryContent(amountMl: 100, loggedAt: now - Int64(i % 5) * 1000),
                deviceID: nil, now: now)
        }
        var seen: [String] = []
        var cursor: EntryCursor?
        repeat {
            let page = try store.listEntries(userID: user.id, from: nil, to: nil, after: cursor, limit: 7)
            seen += page.map(\.id)
            cursor = page.count == 7 ? page.last.map { EntryCursor(loggedAt: $0.content.loggedAt, id: $0.id) } : nil
        } while cursor != nil
        XCTAssertEqual(seen.count, 25)
        XCTAssertEqual(Set(seen).count, 25)
    }
}
