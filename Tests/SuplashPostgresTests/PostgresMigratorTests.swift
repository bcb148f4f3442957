import Foundation
import SuplashPostgres
import SuplashSQL
import SuplashStorage
import XCTest

/// `Migrations/postgres` mirrors `Migrations/sqlite` and follows the same rules.
final class PostgresMigratorTests: XCTestCase {
    let root = PostgresTestSupport.packageRoot

    /// Runs without PostgreSQL: the two directories list the same versions and names.
    func testPostgresMigrationsMirrorSQLiteVersionsAndNames() throws {
        let sqlite = try Migrator.load(directory: root + "/Migrations/sqlite")
        let postgres = try Migrator.load(directory: root + "/Migrations/postgres")
        XCTAssertEqual(sqlite.map(\.version), postgres.map(\.version))
        XCTAssertEqual(sqlite.map(\.name), postgres.map(\.name))
    }

    func testAppliesOnceInOrderAndRecordsChecksums() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        let migrations = try Migrator.load(directory: root + "/Migrations/postgres")
        XCTAssertEqual(try PostgresMigrator.pending(db, migrations).count, migrations.count)
        XCTAssertEqual(try PostgresMigrator.migrate(db, migrations), migrations.count)
        XCTAssertEqual(try PostgresMigrator.migrate(db, migrations), 0)
        XCTAssertTrue(try PostgresMigrator.pending(db, migrations).isEmpty)
        let applied = try PostgresMigrator.applied(db)
        XCTAssertEqual(applied.map(\.version), migrations.map(\.version))
        XCTAssertEqual(applied.map(\.checksum), migrations.map(\.checksum))
        XCTAssertTrue(applied.allSatisfy { $0.appliedAt.hasSuffix("Z") && $0.appliedAt.count == 24 })
        // Every SQLite table exists on PostgreSQL too.
        let tables = Set(
            try db.read { c in
                try c.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
            }.compactMap { row -> String? in
                if case .text(let name) = row[0] { return name }
                return nil
            })
        for table in [
            "database_identity", "change_sequence", "users", "sessions", "refresh_tokens", "admin_keys",
            "water_entries", "sync_state", "idempotency_records", "days", "daily_totals", "bills", "achievements",
            "erased_accounts", "email_codes", "outbox", "apple_identities", "server_secrets", "schema_migrations", "devices",
            "device_tokens", "apple_revoke_jobs", "apple_notifications", "mail_holds", "push_outbox",
        ] {
            XCTAssertTrue(tables.contains(table), table)
        }
    }

    func testChangedChecksumRefusesAndAppliesNothing() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        let migrations = try Migrator.load(directory: root + "/Migrations/postgres")
        try PostgresMigrator.migrate(db, Array(migrations.prefix(2)))
        var changed = migrations
        changed[0] = Migration(version: changed[0].version, name: changed[0].name, sql: changed[0].sql + "\n-- edited\n")
        XCTAssertThrowsError(try PostgresMigrator.migrate(db, changed)) { error in
            guard case MigrationError.checksumMismatch(let version, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(version, 1)
        }
        XCTAssertEqual(try PostgresMigrator.applied(db).count, 2)
        XCTAssertThrowsError(try PostgresMigrator.migrate(db, Array(migrations.dropFirst()))) { error in
            guard case MigrationError.missingMigration = error else { return XCTFail("\(error)") }
        }
    }

    func testFailingMigrationRollsBackWhole() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        let bad = Migration(version: 1, name: "bad", sql: "CREATE TABLE half (x INTEGER); SELECT * FROM missing_table;")
        XCTAssertThrowsError(try PostgresMigrator.migrate(db, [bad])) { error in
            guard case MigrationError.failed(1, "bad", _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertTrue(try PostgresMigrator.applied(db).isEmpty)
        XCTAssertEqual(try db.read { try $0.query("SELECT to_regclass('half') IS NULL").first?[0] }, .integer(1))
    }

    func testConcurrentInstancesApplyEachMigrationOnce() throws {
        let url = try PostgresTestSupport.url()
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        let migrations = try Migrator.load(directory: root + "/Migrations/postgres")
        let total = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            do {
                let instance = try PostgresDatabase(url: url, poolSize: 1)
                defer { instance.close() }
                let applied = try PostgresMigrator.migrate(instance, migrations)
                total.withLock { $0 += applied }
            } catch {
                XCTFail("\(error)")
            }
        }
        XCTAssertEqual(total.current, migrations.count)
        XCTAssertEqual(try PostgresMigrator.applied(db).count, migrations.count)
    }
}
