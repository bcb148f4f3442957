import Foundation
import SuplashDomain
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// Smart reminders' tables on SQLite: the claim and history reads use their indexes, at most one
/// pending hydration reminder per user, and erasure leaves no reminder data behind.
final class ReminderStoreTests: XCTestCase {
    var db: SQLiteDatabase?

    override func tearDown() {
        db?.close()
        db = nil
    }

    let uid = "01930000-0000-7000-8000-000000000001"
    let now: Int64 = 1_790_000_000_000

    func makeStore() throws -> SQLiteStore {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        _ = try store.createUser(
            UserProfile(id: uid, email: "a@example.test", displayName: nil, now: now), passwordHash: "x",
            session: NewSession(id: "s", userID: uid, refreshTokenHash: [1], createdAt: now, refreshExpiresAt: now + 1))
        return store
    }

    /// Inserts a reminder row of the test user, due at `dueAt` (default `now`) and sent at
    /// `sentAt` (default never).
    func insertReminder(
        _ id: String, kind: String = "hydration", state: String = "pending", dueAt: Int64? = nil, sentAt: Int64? = nil
    ) throws {
        let (uid, due) = (uid, dueAt ?? now)
        let sent: SQLValue = sentAt.map { .integer($0) } ?? .null
        try XCTUnwrap(db).write { w in
            try w.connection.execute(
                """
                INSERT INTO reminders (id, user_id, kind, due_at, state, local_date, sent_at, created_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, '2026-09-21', ?6, ?4, ?4)
                """, [.text(id), .text(uid), .text(kind), .integer(due), .text(state), sent])
        }
    }

    func plan(_ sql: String, _ args: [SQLValue]) throws -> String {
        try XCTUnwrap(db).read { c in
            try c.query("EXPLAIN QUERY PLAN " + sql, args).map { String(describing: $0["detail"]) }.joined(separator: "\n")
        }
    }

    func testClaimAndHistoryUseTheirIndexes() throws {
        _ = try makeStore()
        let due = try plan(
            "SELECT id FROM reminders WHERE state = 'pending' AND due_at <= ? ORDER BY due_at LIMIT ?", [.integer(now), .integer(50)])
        XCTAssertTrue(due.contains("reminders_due"), due)
        XCTAssertFalse(due.contains("TEMP B-TREE"), due)
        let history = try plan(
            "SELECT id FROM reminders WHERE user_id = ? ORDER BY due_at DESC LIMIT ?", [.text(uid), .integer(51)])
        XCTAssertTrue(history.contains("reminders_history"), history)
        XCTAssertFalse(history.contains("TEMP B-TREE"), history)
        let subject = try plan(
            "SELECT id FROM reminders WHERE user_id = ? AND subject_id = ? AND kind = 'bill'", [.text(uid), .text("b")])
        XCTAssertTrue(subject.contains("reminders_subject"), subject)
        // The latest intake write walks at most 200 entries in the index's order: no sort.
        let intake = try plan(ReminderSQL.lastIntakeWrite.sqlite, [.text(uid), .integer(now)])
        XCTAssertTrue(intake.contains("water_entries_list"), intake)
        XCTAssertFalse(intake.contains("TEMP B-TREE"), intake)
        let planHistory = try plan(ReminderSQL.planHistory.sqlite, [.text(uid), .integer(12)])
        XCTAssertTrue(planHistory.contains("reminders_plan"), planHistory)
        XCTAssertFalse(planHistory.contains("TEMP B-TREE"), planHistory)
        let purge = try plan(ReminderRetentionSQL.purge.sqlite, [.integer(now), .integer(2000)])
        XCTAssertTrue(purge.contains("reminders_ended"), purge)
        XCTAssertFalse(purge.contains("TEMP B-TREE"), purge)
        let hours = try plan(HourlyTotals.bucketsSQL.sqlite, [.text(uid), .text("2026-09-07")])
        XCTAssertTrue(hours.contains("USING PRIMARY KEY") || hours.contains("sqlite_autoindex_drinking_hours"), hours)
    }

    func testOnePendingHydrationReminderPerUser() throws {
        _ = try makeStore()
        // Sign-up planned the first reminder: remove it to insert by hand.
        try XCTUnwrap(db).write { w in try w.connection.execute("DELETE FROM reminders", []) }
        try insertReminder("r1")
        XCTAssertThrowsError(try insertReminder("r2"))
        try insertReminder("r3", state: "sent")
        try insertReminder("r4", kind: "bill")
    }

    func testErasureRemovesReminderData() throws {
        let store = try makeStore()
        _ = try store.createEntry(
            userID: uid, id: "e1", content: WaterEntryContent(amountMl: 250, loggedAt: now - 86_400_000, source: .phone),
            deviceID: nil, now: now)
        // The entry planned the next hydration reminder; a bill reminder joins it.
        try insertReminder("r1", kind: "bill")
        let counts = {
            try XCTUnwrap(self.db).read { c in
                try ["drinking_hours", "reminders"].map { try c.query("SELECT COUNT(*) FROM \($0)", [])[0][0] }
            }
        }
        XCTAssertEqual(try counts(), [.integer(1), .integer(2)])
        XCTAssertTrue(try store.eraseAccount(userID: uid, now: now))
        XCTAssertEqual(try counts(), [.integer(0), .integer(0)])
    }

    /// The recompute reads only the pending and the sent hydration reminders of the history:
    /// `maxPerDay` counts today's sent ones however many cancelled, bill and campaign rows lie
    /// between them and now.
    func testMaxPerDaySeesTodaysSentRemindersPastOtherRows() throws {
        let store = try makeStore()
        // Today (UTC, awake 07:00–23:00): two sent hydration reminders this morning, then 60
        // cancelled hydration rows and 60 bill and campaign rows due after them.
        typealias Row = (kind: String, state: String, due: Int64, sent: Bool)
        var rows: [Row] = [("hydration", "sent", now - 3 * 3_600_000, true), ("hydration", "ignored", now - 2 * 3_600_000, true)]
        for i in 0..<60 {
            let t = Int64(i) * 1000
            rows.append(("hydration", "cancelled", now - 3_600_000 + t, false))
            rows.append((i % 2 == 0 ? "bill" : "campaign", "sent", now - 1_800_000 + t, true))
        }
        for (n, r) in rows.enumerated() {
            try insertReminder("h\(n)", kind: r.kind, state: r.state, dueAt: r.due, sentAt: r.sent ? r.due : nil)
        }
        func next(maxPerDay: Int) throws -> NextReminder? {
            _ = try store.updateProfile(userID: uid, now: now) { p in
                var p = p
                p.reminders.maxPerDay = maxPerDay
                return p
            }
            return try store.reminderOverview(userID: uid, limit: 50).next
        }
        XCTAssertNil(try next(maxPerDay: 2), "two sent today: the day's reminders are used up")
        XCTAssertNotNil(try next(maxPerDay: 3), "one more is allowed")
    }
}
