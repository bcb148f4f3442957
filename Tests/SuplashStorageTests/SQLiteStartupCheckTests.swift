import Foundation
import XCTest

@testable import SuplashStorage

/// The start-up checks of a database file: the header check and both forms of the bounded
/// integrity check (`quick_check`, and the edge walk used above the size bound).
final class SQLiteStartupCheckTests: XCTestCase {
    /// A database with a rowid table of 2,000 rows, a WITHOUT ROWID table, an index and a
    /// partial index, checkpointed into the main file and closed.
    func makeDatabase(_ directory: TemporaryDirectory) throws -> String {
        let path = directory.file("check.sqlite")
        let db = try SQLiteDatabase(path: path, readers: 1)
        try db.write { ctx in
            try ctx.connection.execute(
                """
                CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;
                CREATE TABLE notes (id INTEGER PRIMARY KEY, user TEXT NOT NULL, body TEXT NOT NULL, gone INTEGER NOT NULL);
                CREATE INDEX notes_user ON notes (user, id DESC);
                CREATE INDEX notes_gone ON notes (user) WHERE gone = 1;
                INSERT INTO kv VALUES ('a', 1), ('b', 2);
                """)
        }
        try db.write { ctx in
            for i in 0..<2000 {
                try ctx.connection.run(
                    "INSERT INTO notes (user, body, gone) VALUES (?, ?, ?)",
                    [.text("u\(i % 7)"), .text(String(repeating: "n", count: 200)), .integer(Int64(i % 2))])
            }
        }
        _ = try db.checkpoint()
        db.close()
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        return path
    }

    func testHeaderCheckFindsATruncatedFileAndAFileThatIsNoDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = try makeDatabase(directory)
        XCTAssertFalse(try SQLiteStartupCheck.checkHeader(path: path, walPresent: false), "an intact file")
        let size = try XCTUnwrap(fileSize(path))
        XCTAssertEqual(truncate(path, off_t(size - 4096)), 0)
        XCTAssertThrowsError(try SQLiteStartupCheck.checkHeader(path: path, walPresent: false)) { error in
            XCTAssertEqual(error as? SQLiteStartupCheck.Problem, .truncated(expectedBytes: size, actualBytes: size - 4096))
        }
        XCTAssertTrue(
            try SQLiteStartupCheck.checkHeader(path: path, walPresent: true),
            "with a WAL the missing pages may be there: the caller forces quick_check")
        try directory.write("text.sqlite", String(repeating: "not a database ", count: 20))
        XCTAssertThrowsError(try SQLiteStartupCheck.checkHeader(path: directory.file("text.sqlite"), walPresent: false)) {
            XCTAssertEqual($0 as? SQLiteStartupCheck.Problem, .notADatabase)
        }
    }

    func testQuickCheckAndEdgeWalkPassAnIntactDatabaseAndFindADamagedEdgePage() throws {
        let directory = try TemporaryDirectory()
        let path = try makeDatabase(directory)
        var db = try SQLiteDatabase(path: path, readers: 1)
        XCTAssertEqual(try SQLiteStartupCheck.checkIntegrity(db).method, "quick_check")
        XCTAssertEqual(try SQLiteStartupCheck.checkIntegrity(db, maxQuickCheckBytes: 0).method, "edge walk")
        db.close()
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }

        // Damage the last page (the leaf written last): its b-tree page header.
        let size = try XCTUnwrap(fileSize(path))
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: UInt64(size - 4096))
        handle.write(Data(repeating: 0x42, count: 16))
        try handle.close()
        db = try SQLiteDatabase(path: path, readers: 1)
        defer { db.close() }
        for limit in [SQLiteStartupCheck.quickCheckMaxBytes, 0] {
            XCTAssertThrowsError(try SQLiteStartupCheck.checkIntegrity(db, maxQuickCheckBytes: limit)) { error in
                guard case .corrupt? = error as? SQLiteStartupCheck.Problem else {
                    return XCTFail("expected corrupt, got \(error)")
                }
            }
        }
    }

    func testWritabilityProbe() throws {
        let directory = try TemporaryDirectory()
        XCTAssertNil(SQLiteStartupCheck.probeWritable(directory: directory.path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file(".suplash-write-probe")), "the probe is removed")
        XCTAssertEqual(SQLiteStartupCheck.probeWritable(directory: directory.file("missing")), ENOENT)
    }
}
