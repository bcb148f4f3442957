import Foundation
import XCTest

@testable import SuplashStorage

/// The WAL position file: a damaged or truncated WAL that drops acknowledged commits is
/// detected at the next open.
final class AcknowledgedPositionTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private static let positionSQL = "SELECT position FROM seq WHERE singleton = 1"

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory = nil
    }

    /// A database with `commits` acknowledged commits, each taking the next position, and a
    /// crash image of it (database, WAL and side file copied while it is open, no `-shm`)
    /// in `image/`; returns the image's database path.
    private func crashImage(commits: Int) throws -> String {
        let db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { db.close() }
        try db.write { context in
            try context.connection.execute(
                """
                CREATE TABLE seq (singleton INTEGER PRIMARY KEY, position INTEGER NOT NULL);
                INSERT INTO seq VALUES (1, 0);
                CREATE TABLE rows (n INTEGER PRIMARY KEY, pad BLOB);
                """)
        }
        XCTAssertEqual(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL), .created)
        for n in 0..<commits {
            try db.write { context in
                try context.connection.run("UPDATE seq SET position = position + 1 WHERE singleton = 1")
                try context.connection.run("INSERT INTO rows VALUES (?, zeroblob(3000))", [.int(n)])
            }
        }
        XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(Int64(commits), databaseID: ""))
        let image = directory.file("image")
        try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: false)
        for suffix in ["", "-wal", "-position"] {
            try FileManager.default.copyItem(atPath: directory.file("app.sqlite") + suffix, toPath: image + "/app.sqlite" + suffix)
        }
        return image + "/app.sqlite"
    }

    func testAnIntactCrashImageIsConsistent() throws {
        let path = try crashImage(commits: 40)
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        XCTAssertEqual(
            try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL),
            .consistent(database: 40, acknowledged: 40))
        // Tracking goes on from there.
        try db.write { try $0.connection.run("UPDATE seq SET position = position + 1 WHERE singleton = 1") }
        XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(41, databaseID: ""))
    }

    func testAFlippedByteInAWALFrameIsDetected() throws {
        let path = try crashImage(commits: 40)
        let wal = path + "-wal"
        let size = try XCTUnwrap(fileSize(wal))
        // A byte in the page data of a frame about halfway through the WAL (32-byte header,
        // then frames of a 24-byte header and a 4096-byte page).
        let frames = (size - 32) / (24 + 4096)
        let offset = 32 + (frames / 2) * (24 + 4096) + 24 + 1000
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: wal))
        try handle.seek(toOffset: UInt64(offset))
        let byte = try XCTUnwrap(handle.readData(ofLength: 1).first)
        try handle.seek(toOffset: UInt64(offset))
        handle.write(Data([byte ^ 0x01]))
        try handle.close()

        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        XCTAssertThrowsError(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL)) { error in
            guard let behind = error as? AcknowledgedPositionBehind else { return XCTFail("\(error)") }
            XCTAssertEqual(behind.acknowledgedPosition, 40)
            XCTAssertLessThan(behind.databasePosition, 40)
            XCTAssertTrue(behind.description.contains("restore the newest backup"), behind.description)
        }
        // Nothing was changed: the side file still holds the acknowledged position.
        XCTAssertEqual(AcknowledgedPositionFile.read(path + "-position"), .position(40, databaseID: ""))
    }

    func testATruncatedWALTailIsDetected() throws {
        let path = try crashImage(commits: 40)
        let wal = path + "-wal"
        let size = try XCTUnwrap(fileSize(wal))
        XCTAssertEqual(truncate(wal, off_t(size - 3 * (24 + 4096))), 0)
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        XCTAssertThrowsError(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL)) { error in
            XCTAssertEqual((error as? AcknowledgedPositionBehind)?.acknowledgedPosition, 40)
        }
    }

    func testAnUnreadableSideFileIsRewrittenNotTrusted() throws {
        let path = try crashImage(commits: 5)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path + "-position"))
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        XCTAssertEqual(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL), .rewrittenUnreadable)
        XCTAssertEqual(AcknowledgedPositionFile.read(path + "-position"), .position(5, databaseID: ""))
    }

    func testAFailedCommitDoesNotAdvanceTheFile() throws {
        let db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { db.close() }
        try db.write {
            try $0.connection.execute("CREATE TABLE seq (singleton INTEGER PRIMARY KEY, position INTEGER); INSERT INTO seq VALUES (1, 7)")
        }
        try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL)
        db.injectCommitFailures(StorageError(code: 13, message: "injected"), count: 1)
        XCTAssertThrowsError(try db.write { try $0.connection.run("UPDATE seq SET position = 8") })
        XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(7, databaseID: ""))
        try db.write { try $0.connection.run("UPDATE seq SET position = 9") }
        XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(9, databaseID: ""))
    }

    func testASideFileOfAnotherDatabaseIsRewrittenNotARefusal() throws {
        // A restored backup: its id was forked, its position is behind the live database's file.
        let db = try SQLiteDatabase(path: directory.file("restored.sqlite"))
        defer { db.close() }
        try db.write {
            try $0.connection.execute(
                "CREATE TABLE seq (singleton INTEGER PRIMARY KEY, position INTEGER); INSERT INTO seq VALUES (1, 3);"
                    + "CREATE TABLE ident (singleton INTEGER PRIMARY KEY, id TEXT); INSERT INTO ident VALUES (1, 'backup-id')")
        }
        let identitySQL = "SELECT id FROM ident WHERE singleton = 1"
        try Data(AcknowledgedPositionFile.record(50, databaseID: "live-id").utf8)
            .write(to: URL(fileURLWithPath: db.acknowledgedPositionPath))
        XCTAssertEqual(
            try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL, identitySQL: identitySQL),
            .rewrittenOtherDatabase)
        XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(3, databaseID: "backup-id"))

        // The same id behind its own record is still refused; a record without an id (older
        // files) is compared with any database.
        try Data(AcknowledgedPositionFile.record(50, databaseID: "backup-id").utf8)
            .write(to: URL(fileURLWithPath: db.acknowledgedPositionPath))
        XCTAssertThrowsError(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL, identitySQL: identitySQL))
        try Data("00000000000000000050 00000000000000000050\n".utf8).write(to: URL(fileURLWithPath: db.acknowledgedPositionPath))
        XCTAssertThrowsError(try db.trackAcknowledgedPosition(positionSQL: Self.positionSQL, identitySQL: identitySQL))
    }

    func testAMissingOrUnreadableSideFileForksTheIdOfADatabaseThatHoldsChanges() throws {
        let db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { db.close() }
        try db.write {
            try $0.connection.execute(
                "CREATE TABLE seq (singleton INTEGER PRIMARY KEY, position INTEGER); INSERT INTO seq VALUES (1, 0);"
                    + "CREATE TABLE ident (singleton INTEGER PRIMARY KEY, id TEXT); INSERT INTO ident VALUES (1, 'first-id')")
        }
        let identitySQL = "SELECT id FROM ident WHERE singleton = 1"
        let forkSQL = "UPDATE ident SET id = 'fork-' || lower(hex(randomblob(4))) WHERE singleton = 1"
        func id() throws -> String {
            guard case .text(let id)? = try db.read({ try $0.scalar(identitySQL) }) else { return "" }
            return id
        }
        // A new database (position 0): nothing was handed out yet, no fork.
        XCTAssertEqual(
            try db.trackAcknowledgedPosition(
                positionSQL: Self.positionSQL, identitySQL: identitySQL,
                forkIdentitySQL: forkSQL), .created)
        XCTAssertEqual(try id(), "first-id")
        try db.write { try $0.connection.run("UPDATE seq SET position = 5") }
        // The file deleted (or torn) beside a database with changes: forked, and the file names the new id.
        for damage in [
            { try FileManager.default.removeItem(atPath: db.acknowledgedPositionPath) },
            { try Data("garbage".utf8).write(to: URL(fileURLWithPath: db.acknowledgedPositionPath)) },
        ] {
            let before = try id()
            try damage()
            XCTAssertEqual(
                try db.trackAcknowledgedPosition(
                    positionSQL: Self.positionSQL, identitySQL: identitySQL,
                    forkIdentitySQL: forkSQL), .forked)
            XCTAssertNotEqual(try id(), before)
            XCTAssertEqual(AcknowledgedPositionFile.read(db.acknowledgedPositionPath), .position(5, databaseID: try id()))
        }
        // An intact file: no fork.
        let kept = try id()
        XCTAssertEqual(
            try db.trackAcknowledgedPosition(
                positionSQL: Self.positionSQL, identitySQL: identitySQL,
                forkIdentitySQL: forkSQL), .consistent(database: 5, acknowledged: 5))
        XCTAssertEqual(try id(), kept)
    }

    func testTheRecordFormat() {
        XCTAssertEqual(AcknowledgedPositionFile.record(42, databaseID: "db1"), "00000000000000000042 00000000000000000042 db1\n")
    }
}
