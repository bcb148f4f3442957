import Foundation
import XCTest

@testable import SuplashStorage

/// The database's files and backups hold emails and password hashes: owner-only (0600).
final class FileModeTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory = nil
    }

    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    func testANewDatabaseItsWALSHMProbeAndPositionFilesAreOwnerOnly() throws {
        let previous = umask(0o022)  // the usual umask: files would be 0644
        defer { umask(previous) }
        let path = directory.file("app.sqlite")
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.write {
            try $0.connection.execute("CREATE TABLE seq (singleton INTEGER PRIMARY KEY, position INTEGER); INSERT INTO seq VALUES (1, 1)")
        }
        try db.trackAcknowledgedPosition(positionSQL: "SELECT position FROM seq")
        try db.probeWritability()
        for file in [path, path + "-wal", path + "-shm", db.writeProbePath, db.acknowledgedPositionPath] {
            XCTAssertEqual(mode(file), 0o600, file)
        }
    }

    func testAnExistingWorldReadableDatabaseIsNarrowed() throws {
        let path = directory.file("old.sqlite")
        do {
            let db = try SQLiteDatabase(path: path)
            try db.write { try $0.connection.execute("CREATE TABLE t (n INTEGER)") }
            db.close()
        }
        XCTAssertEqual(chmod(path, 0o644), 0)
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.write { try $0.connection.run("INSERT INTO t VALUES (1)") }
        XCTAssertEqual(mode(path), 0o600)
        XCTAssertEqual(mode(path + "-wal"), 0o600)
    }

    func testABackupIsOwnerOnly() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { db.close() }
        try db.write { try $0.connection.execute("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)") }
        let target = directory.file("backup.sqlite")
        XCTAssertGreaterThan(try db.backup(to: target), 0)
        XCTAssertEqual(mode(target), 0o600)
        XCTAssertNil(mode(target + ".partial"))
    }
}
