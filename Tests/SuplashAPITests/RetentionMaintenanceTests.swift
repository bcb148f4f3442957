import Foundation
import SuplashStorage
import XCTest

/// The retention job (docs/apple.md, "Retention") in the real server on SQLite: revoke jobs that
/// ended long ago, old Apple event `jti`s and held code mail past its code's expiry are
/// deleted; a pending revoke job and unexpired mail stay.
final class RetentionMaintenanceTests: XCTestCase {
    func execute(_ dataDir: String, _ sql: String) throws {
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        try db.write { c in try c.connection.execute(sql) }
    }

    func count(_ dataDir: String, _ sql: String) throws -> Int64? {
        let db = try SQLiteDatabase(path: dataDir + "/suplash.sqlite", readers: 1)
        defer { db.close() }
        return try db.read { c in try c.query(sql).first?[0].int64 }
    }

    func testOldRowsAndExpiredHeldMailAreDeleted() throws {
        let dir = TestServer.makeDataDir()
        XCTAssertEqual(try TestServer(dataDir: dir).stop(), 0)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        let relay = "held@privaterelay.appleid.com"
        try execute(
            dir,
            """
            INSERT INTO apple_revoke_jobs (id, sub, client_id, refresh_token, created_at, attempts, next_attempt_at, delivered_at)
                VALUES ('old-done', 's1', 'c', '', 1, 1, 1, \(now - 31 * day));
            INSERT INTO apple_revoke_jobs (id, sub, client_id, refresh_token, created_at, attempts, next_attempt_at, failed_at)
                VALUES ('recent-failed', 's2', 'c', '', 1, 12, 1, \(now - 29 * day));
            INSERT INTO apple_revoke_jobs (id, sub, client_id, refresh_token, created_at, attempts, next_attempt_at)
                VALUES ('pending', 's3', 'c', '', 1, 0, \(now + 365 * day));
            INSERT INTO apple_notifications (jti, received_at) VALUES ('old-jti', \(now - 9 * day)), ('new-jti', \(now - day));
            INSERT INTO mail_holds (address, held_at) VALUES ('\(relay)', 1);
            INSERT INTO outbox (id, recipient, subject, body, created_at, next_attempt_at, expires_at)
                VALUES ('expired', '\(relay)', 'Code', '123456', 1, 1, \(now - 60_000)),
                       ('fresh', '\(relay)', 'Code', '654321', 1, 1, \(now + day));
            """)
        let s = try TestServer(dataDir: dir)
        let deadline = Date(timeIntervalSinceNow: 60)
        while !s.serverLog.contains("retention_maintenance") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertTrue(s.serverLog.contains("\"retention_maintenance\""), s.serverLog)
        XCTAssertEqual(s.stop(), 0)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM apple_revoke_jobs WHERE id = 'old-done'"), 0)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM apple_revoke_jobs WHERE id IN ('recent-failed', 'pending')"), 2)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM apple_notifications WHERE jti = 'old-jti'"), 0)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM apple_notifications WHERE jti = 'new-jti'"), 1)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM outbox WHERE id = 'expired'"), 0)
        XCTAssertEqual(try count(dir, "SELECT count(*) FROM outbox WHERE id = 'fresh'"), 1, "held, not expired: kept")
    }
}
