import Foundation
import SuplashStorage
import XCTest

/// The reminder history's retention in the running server: at start the scheduler deletes ended
/// hydration and bill reminders older than `reminders.historyDays`, and keeps pending, campaign
/// and newer ones (docs/reminders.md, "History retention").
final class ReminderRetentionTests: XCTestCase {
    func withDatabase<T>(_ dataDir: String, _ body: (SQLiteDatabase) throws -> T) throws -> T {
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        return try body(db)
    }

    func testOldEndedRemindersArePurgedAtStart() throws {
        let first = try TestServer()
        let user = try first.signUp()
        XCTAssertEqual(first.stop(), 0)
        let dir = first.dataDir
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        // (id suffix, kind, state, age in days)
        let rows: [(Int, String, String, Int64)] = [
            (1, "hydration", "ignored", 100), (2, "hydration", "acted", 40), (3, "bill", "sent", 35),
            (4, "campaign", "sent", 100), (5, "bill", "pending", 100), (6, "hydration", "dismissed", 10),
        ]
        try withDatabase(dir) { db in
            try db.write { w in
                for (n, kind, state, age) in rows {
                    _ = try w.connection.execute(
                        """
                        INSERT INTO reminders (id, user_id, kind, due_at, state, local_date, sent_at, created_at, updated_at)
                        VALUES (?1, ?2, ?3, ?4, ?5, '2026-01-01', ?4, ?4, ?4)
                        """,
                        [
                            .text(String(format: "0193e000-0000-4000-8000-%012d", n)), .text(user.id), .text(kind),
                            .integer(now - age * day), .text(state),
                        ])
                }
            }
        }
        let second = try TestServer(dataDir: dir, environment: ["SUPLASH_REMINDERS_HISTORY_DAYS": "30"])
        let deadline = Date(timeIntervalSinceNow: 20)
        while !second.serverLog.contains("reminder_history_purged"), Date() < deadline { usleep(50_000) }
        XCTAssertEqual(second.stop(), 0)
        XCTAssertTrue(second.serverLog.contains("reminder_history_purged"), second.serverLog)
        let left = try withDatabase(dir) { db in
            try db.read { c in
                try c.query("SELECT id FROM reminders WHERE id LIKE '0193e000-%' ORDER BY id").compactMap { $0["id"].text?.suffix(1) }
            }
        }
        // Gone: the ended hydration and bill reminders older than 30 days (1, 2, 3).
        XCTAssertEqual(left.map(String.init), ["4", "5", "6"])
    }
}
