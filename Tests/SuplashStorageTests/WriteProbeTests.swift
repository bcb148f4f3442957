import Foundation
import XCTest

@testable import SuplashStorage

final class WriteProbeTests: SingleTableDatabaseTestCase {
    func testTheProbeWritesNothingAndLeavesAnEmptyOwnerOnlyFile() throws {
        let walBefore = fileSize(db.path + "-wal")
        let commitsBefore = db.writerStatistics.commits
        try db.probeWritability()
        try db.probeWritability()
        var info = stat()
        XCTAssertEqual(stat(db.writeProbePath, &info), 0)
        XCTAssertEqual(info.st_size, 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(fileSize(db.path + "-wal"), walBefore, "no WAL frame written")
        XCTAssertEqual(db.writerStatistics.commits, commitsBefore)
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 0)
    }

    /// A database SQLite can only read (here: `query_only` on the writer, as when the file
    /// was opened read-only) fails the probe with `.readOnly`.
    func testAReadOnlyDatabaseFailsTheProbe() throws {
        try db.writeExclusive { try $0.connection.execute("PRAGMA query_only=ON") }
        assertStorageError(.readOnly) { try db.probeWritability() }
        try db.writeExclusive { try $0.connection.execute("PRAGMA query_only=OFF") }
        try db.probeWritability()
    }

    func testAnUnusableProbeFileFailsTheProbe() throws {
        try? FileManager.default.removeItem(atPath: db.writeProbePath)
        try FileManager.default.createDirectory(atPath: db.writeProbePath, withIntermediateDirectories: false)
        assertStorageError(.ioError) { try db.probeWritability() }
    }

    func testAnotherWriterHoldingTheLockFailsTheProbeWithBusy() throws {
        db.close()
        db = try SQLiteDatabase(path: directory.file("app.sqlite"), busyTimeoutMs: 50)
        let other = try SQLiteConnection(path: directory.file("app.sqlite"), role: .writer, busyTimeoutMs: 50)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE")
        assertStorageError(.busy) { try db.probeWritability() }
        try other.execute("ROLLBACK")
        try db.probeWritability()
    }

    func testErrnoClassification() {
        XCTAssertEqual(SQLiteDatabase.errnoError(ENOSPC, "x").kind, .full)
        XCTAssertEqual(SQLiteDatabase.errnoError(EDQUOT, "x").kind, .full)
        XCTAssertEqual(SQLiteDatabase.errnoError(EROFS, "x").kind, .readOnly)
        XCTAssertEqual(SQLiteDatabase.errnoError(EACCES, "x").kind, .readOnly)
        XCTAssertEqual(SQLiteDatabase.errnoError(EIO, "x").kind, .ioError)
    }
}
