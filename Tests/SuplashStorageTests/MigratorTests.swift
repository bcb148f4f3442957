import Foundation
import SuplashCrypto
import SuplashSQL
import XCTest

@testable import SuplashStorage

final class MigratorTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var migrations: TemporaryDirectory!
    private var db: SQLiteDatabase!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        migrations = try TemporaryDirectory()
        db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        try migrations.write("0001_create_users.sql", "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE);\n")
        try migrations.write(
            "0002_create_entries.sql",
            """
            CREATE TABLE entries (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), ml INTEGER NOT NULL);
            CREATE INDEX entries_user ON entries(user_id);
            """)
        try migrations.write("README.md", "not a migration")
    }

    override func tearDown() {
        db?.close()
        db = nil
        directory = nil
        migrations = nil
    }

    private func expectMigrationError(
        _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line,
        _ check: (MigrationError) -> Bool
    ) {
        do {
            try body()
            XCTFail("expected a MigrationError", file: file, line: line)
        } catch let error as MigrationError {
            XCTAssertTrue(check(error), "unexpected \(error)", file: file, line: line)
        } catch {
            XCTFail("expected a MigrationError, got \(type(of: error))", file: file, line: line)
        }
    }

    func testLoadSortsByVersionAndChecksumsFileBytes() throws {
        try migrations.write("0010_later.sql", "CREATE TABLE later (x);")
        let loaded = try Migrator.load(directory: migrations.path)
        XCTAssertEqual(loaded.map(\.version), [1, 2, 10])
        XCTAssertEqual(loaded.map(\.name), ["create_users", "create_entries", "later"])
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: migrations.file("0002_create_entries.sql")))
        XCTAssertEqual(loaded[1].checksum, SHA256.hex([UInt8](bytes)))
        XCTAssertEqual(loaded[1].checksum.count, 64)
    }

    func testApplyInOrderThenIdempotent() throws {
        let loaded = try Migrator.load(directory: migrations.path)
        XCTAssertEqual(try Migrator.pending(db, loaded).map(\.version), [1, 2])
        XCTAssertEqual(try Migrator.migrate(db, loaded), 2)
        XCTAssertEqual(try Migrator.migrate(db, loaded), 0)
        XCTAssertEqual(try Migrator.pending(db, loaded), [])

        let applied = try Migrator.applied(db)
        XCTAssertEqual(applied.map(\.version), [1, 2])
        XCTAssertEqual(applied.map(\.checksum), loaded.map(\.checksum))
        XCTAssertTrue(applied[0].appliedAt.hasSuffix("Z"))
        // The schema exists and foreign keys are enforced.
        try db.write { try $0.connection.run("INSERT INTO users(id, email) VALUES (1, 'a')") }
        assertStorageError(.constraintForeignKey) {
            try db.write { try $0.connection.run("INSERT INTO entries(user_id, ml) VALUES (2, 250)") }
        }

        // A new file applies alone.
        try migrations.write("0003_add_goal.sql", "ALTER TABLE users ADD COLUMN goal_ml INTEGER;")
        let more = try Migrator.load(directory: migrations.path)
        XCTAssertEqual(try Migrator.pending(db, more).map(\.name), ["add_goal"])
        XCTAssertEqual(try Migrator.migrate(db, more), 1)
        XCTAssertEqual(try db.read { try $0.query("PRAGMA table_info(users)").count }, 3)
    }

    func testChangedChecksumRefusesAndAppliesNothing() throws {
        XCTAssertEqual(try Migrator.migrate(db, try Migrator.load(directory: migrations.path)), 2)
        try migrations.write("0001_create_users.sql", "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT);\n")
        try migrations.write("0003_new.sql", "CREATE TABLE newer (x);")
        let changed = try Migrator.load(directory: migrations.path)
        expectMigrationError({ try Migrator.migrate(db, changed) }) {
            if case .checksumMismatch(version: 1, name: "create_users") = $0 {
                return $0.description.contains("migration 1 (create_users)") && $0.description.contains("checksum")
            }
            return false
        }
        expectMigrationError({ _ = try Migrator.pending(db, changed) }) {
            if case .checksumMismatch = $0 { return true }
            return false
        }
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name = 'newer'") }, 0)
        XCTAssertEqual(try Migrator.applied(db).count, 2)
    }

    func testMigrationMissingFromDirectoryIsAnError() throws {
        XCTAssertEqual(try Migrator.migrate(db, try Migrator.load(directory: migrations.path)), 2)
        try FileManager.default.removeItem(atPath: migrations.file("0002_create_entries.sql"))
        let fewer = try Migrator.load(directory: migrations.path)
        expectMigrationError({ try Migrator.migrate(db, fewer) }) {
            if case .missingMigration(version: 2, name: "create_entries") = $0 { return true }
            return false
        }
    }

    func testRenamedAndOutOfOrderMigrationsAreRefused() throws {
        XCTAssertEqual(try Migrator.migrate(db, try Migrator.load(directory: migrations.path)), 2)
        let sql2 = try XCTUnwrap(Migrator.load(directory: migrations.path).last?.sql)
        expectMigrationError({
            try Migrator.migrate(
                db,
                [
                    Migration(version: 1, name: "create_users", sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE);\n"),
                    Migration(version: 2, name: "renamed", sql: sql2),
                ])
        }) {
            if case .nameMismatch(version: 2, applied: "create_entries", file: "renamed") = $0 { return true }
            return false
        }
        let loaded = try Migrator.load(directory: migrations.path)
        expectMigrationError({
            try Migrator.migrate(
                db,
                loaded + [
                    Migration(version: 3, name: "c", sql: "SELECT 1"),
                    Migration(version: 3, name: "d", sql: "SELECT 2"),
                ])
        }) {
            if case .duplicateVersion(3, _) = $0 { return true }
            return false
        }
        // Apply 4, then a 3 appears: refused.
        XCTAssertEqual(try Migrator.migrate(db, loaded + [Migration(version: 4, name: "four", sql: "CREATE TABLE four (x);")]), 1)
        expectMigrationError({
            try Migrator.migrate(
                db,
                loaded + [
                    Migration(version: 3, name: "three", sql: "CREATE TABLE three (x);"),
                    Migration(version: 4, name: "four", sql: "CREATE TABLE four (x);"),
                ])
        }) {
            if case .outOfOrder(version: 3, name: "three", latestApplied: 4) = $0 { return true }
            return false
        }
    }

    func testAFailingMigrationRollsBackWholly() throws {
        try migrations.write("0003_broken.sql", "CREATE TABLE good (x); CREATE TABLE broken (;")
        let loaded = try Migrator.load(directory: migrations.path)
        expectMigrationError({ try Migrator.migrate(db, loaded) }) {
            if case .failed(version: 3, name: "broken", let underlying) = $0 { return underlying is StorageError }
            return false
        }
        // 1 and 2 were applied (each in its own transaction); nothing of 3 was.
        XCTAssertEqual(try Migrator.applied(db).map(\.version), [1, 2])
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name = 'good'") }, 0)
        // A migration with its own transaction control is refused the same way.
        let withBegin = [Migration(version: 3, name: "tx", sql: "BEGIN; CREATE TABLE tx (x); COMMIT;")]
        expectMigrationError({ try Migrator.migrate(db, Array(loaded.prefix(2)) + withBegin) }) {
            if case .failed(version: 3, name: "tx", _) = $0 { return true }
            return false
        }
        // The writer still works afterwards.
        try db.write { try $0.connection.run("INSERT INTO users(email) VALUES ('b')") }
    }

    func testBadFileNamesAndDuplicatesAreRejected() throws {
        for bad in ["1_short.sql", "0001-dash.sql", "0001_.sql", "abcd_name.sql", "0000_zero.sql", "0001_bad name.sql", "0001.sql"] {
            let dir = try TemporaryDirectory()
            try dir.write(bad, "SELECT 1;")
            expectMigrationError({ _ = try Migrator.load(directory: dir.path) }) {
                if case .badFileName(bad) = $0 { return $0.description.contains("NNNN_name.sql") }
                return false
            }
        }
        try migrations.write("0002_other.sql", "SELECT 1;")
        expectMigrationError({ _ = try Migrator.load(directory: migrations.path) }) {
            if case .duplicateVersion(2, let files) = $0 { return files.sorted() == ["0002_create_entries.sql", "0002_other.sql"] }
            return false
        }
        expectMigrationError({ _ = try Migrator.load(directory: migrations.file("missing")) }) {
            if case .unreadableDirectory = $0 { return true }
            return false
        }
        let invalid = try TemporaryDirectory()
        try Data([0x53, 0xff, 0xfe]).write(to: URL(fileURLWithPath: invalid.file("0001_latin1.sql")))
        expectMigrationError({ _ = try Migrator.load(directory: invalid.path) }) {
            if case .unreadableFile("0001_latin1.sql") = $0 { return true }
            return false
        }
    }

    func testMigrationsRunBetweenGroupBatchesNotInsideThem() throws {
        XCTAssertEqual(try Migrator.migrate(db, try Migrator.load(directory: migrations.path)), 2)
        let db = self.db!
        let done = DispatchGroup()
        for i in 0..<20 {
            done.enter()
            db.writeAsync(
                { try $0.connection.run("INSERT INTO users(email) VALUES (?)", [.text("u\(i)")]) },
                completion: { _ in done.leave() })
        }
        try migrations.write("0003_goal.sql", "ALTER TABLE users ADD COLUMN goal_ml INTEGER NOT NULL DEFAULT 2000;")
        XCTAssertEqual(try Migrator.migrate(db, try Migrator.load(directory: migrations.path)), 1)
        done.wait()
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM users WHERE goal_ml = 2000") }, 20)
    }

    /// Two databases (as two processes would) migrating the same file apply each migration once.
    func testTwoProcessesMigratingConcurrentlyApplyOnce() throws {
        let second = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { second.close() }
        let loaded = try Migrator.load(directory: migrations.path)
        let counts = Collector<Int>()
        let errors = Collector<String>()
        let first = self.db!
        onThreads(2) { i in
            do { counts.append(try Migrator.migrate(i == 0 ? first : second, loaded)) } catch { errors.append("\(error)") }
        }
        XCTAssertEqual(errors.all, [])
        XCTAssertEqual(counts.all.reduce(0, +), 2)
        XCTAssertEqual(try Migrator.applied(first).map(\.version), [1, 2])
    }
}
