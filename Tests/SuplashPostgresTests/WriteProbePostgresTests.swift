import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import XCTest

/// The write probe and the storage-failure classification on PostgreSQL (spec §2, §7).
final class WriteProbePostgresTests: XCTestCase {
    func testTheProbeCommitsOnAWritableDatabaseAndLeavesTheRowAsItWas() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        defer { db.close() }
        let store = PostgresStore(database: db)
        let before = try db.read { try $0.query("SELECT database_id, created_at FROM database_identity") }
        try store.probeWrite()
        try store.probeWrite()
        let after = try db.read { try $0.query("SELECT database_id, created_at FROM database_identity") }
        XCTAssertEqual(before.map { $0["database_id"].text }, after.map { $0["database_id"].text })
        XCTAssertEqual(before.map { $0["created_at"].int64 }, after.map { $0["created_at"].int64 })
        XCTAssertNil(store.health.problem)
    }

    /// A read-only session (as on a standby or with `default_transaction_read_only`) fails
    /// the probe with 25006 → `readOnly`; writes answer 503 `storage_failed`.
    func testAReadOnlyDatabaseFailsTheProbeAsReadOnly() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        defer { db.close() }
        let store = PostgresStore(database: db)
        try db.read { try $0.execute("SET default_transaction_read_only = on") }  // the pool's one connection
        XCTAssertThrowsError(try store.probeWrite()) { error in
            XCTAssertEqual(error as? RepositoryError, .storage(.readOnly))
        }
        XCTAssertEqual(store.health.problem, StorageHealth.Problem(failure: .readOnly, fromWriteProbe: false))
        XCTAssertEqual(store.health.totalsByKind.first { $0.0 == .readOnly }?.1, 1)
        try db.read { try $0.execute("SET default_transaction_read_only = off") }
        try store.probeWrite()
        store.health.probeSucceeded()
        XCTAssertNil(store.health.problem)
    }

    /// A `pg_dump` backup holds emails and password hashes: owner-only (0600).
    func testABackupIsOwnerOnly() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 2)
        defer { db.close() }
        let store = PostgresStore(database: db)
        let path = NSTemporaryDirectory() + "suplash-pg-backup-mode-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: path) }
        let previous = umask(0o022)
        defer { umask(previous) }
        XCTAssertGreaterThan(try store.backup(to: path), 0)
        let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o600)
    }
}
