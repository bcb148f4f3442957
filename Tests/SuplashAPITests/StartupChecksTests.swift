import Foundation
import SuplashJSON
import XCTest

/// The server refuses to start on damaged or unusable data and says what is wrong and what
/// to do (spec §7); CLI failures name the file and exit with documented codes
/// (docs/operations.md). Each test damages a real data dir and starts the real executable.
final class StartupChecksTests: XCTestCase {
    /// Starts `serve` on `dataDir` (port 0) and waits until it prints `listening on` or exits.
    /// - Returns: nil when it started (it is then stopped), else its exit status and stderr.
    func serve(_ dataDir: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestServer.executable)
        p.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir] + extra
        p.currentDirectoryURL = URL(fileURLWithPath: TestServer.packageRoot)
        var env = ProcessInfo.processInfo.environment
        env["SUPLASH_AUTH_ARGON2_MEMORY_KIB"] = "8192"
        env["SUPLASH_AUTH_ARGON2_ITERATIONS"] = "1"
        env.merge(environment) { $1 }
        p.environment = env
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        if String(decoding: line, as: UTF8.self).contains("listening on") {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
            return nil
        }
        p.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (p.terminationStatus, stderr)
    }

    /// A data dir that held a server with one account and one entry, stopped cleanly.
    func usedDataDir() throws -> String {
        let server = try TestServer()
        let user = try server.signUp()
        let r = try server.request(
            "POST", "/v1/water_logs/me/entries",
            json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], token: user.token)
        XCTAssertEqual(r.status, 201)
        XCTAssertEqual(server.stop(), 0)
        return server.dataDir
    }

    func assertRefused(
        _ result: (Int32, String)?, code: Int32, mentions: [String], file: StaticString = #filePath,
        line: UInt = #line
    ) {
        guard let (status, stderr) = result else { return XCTFail("the server started", file: file, line: line) }
        XCTAssertEqual(status, code, stderr, file: file, line: line)
        for text in mentions { XCTAssertTrue(stderr.contains(text), "\(text) not in: \(stderr)", file: file, line: line) }
        XCTAssertFalse(stderr.contains("failed: Suplash"), "a type name is no message: \(stderr)", file: file, line: line)
    }

    func testZeroLengthDatabaseBesideStateIsRefusedUnlessInitEmpty() throws {
        let dir = try usedDataDir()
        let database = dir + "/suplash.sqlite"
        XCTAssertTrue(FileManager.default.createFile(atPath: database, contents: Data()))
        assertRefused(try serve(dir), code: 65, mentions: [database, "is empty", "jwt-secret", "restore", "--init-empty"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: database)).count, 0, "nothing was created")

        XCTAssertNil(try serve(dir, ["--init-empty"]), "--init-empty starts over on purpose")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertTrue(names.contains { $0.hasPrefix("suplash.sqlite.orphaned-") }, "\(names)")
        XCTAssertTrue(names.contains { $0.hasPrefix("jwt-secret.orphaned-") }, "old tokens must not work: \(names)")
        XCTAssertNil(try serve(dir), "the new database starts without the flag")
        assertRefused(try serve(dir, ["--init-empty"]), code: 64, mentions: [database, "holds a database"])
    }

    func testDatabaseDeletedWithItsWALLeftIsRefused() throws {
        let dir = try usedDataDir()
        let database = dir + "/suplash.sqlite"
        try FileManager.default.removeItem(atPath: database)
        XCTAssertTrue(FileManager.default.createFile(atPath: database + "-wal", contents: Data(repeating: 1, count: 64)))
        assertRefused(try serve(dir), code: 65, mentions: [database, "is missing", "suplash.sqlite-wal", "--init-empty"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: database), "no empty database was created")
    }

    /// With the token secret in the configuration (no `jwt-secret` file), a database deleted
    /// with its WAL (and no mail outbox) still leaves the WAL position file: state, so the
    /// start is refused.
    func testDatabaseAndWALDeletedBesideThePositionFileIsRefused() throws {
        let dir = try usedDataDir()
        let database = dir + "/suplash.sqlite"
        XCTAssertTrue(FileManager.default.fileExists(atPath: database + "-position"))
        for file in [database, database + "-wal", database + "-shm", dir + "/jwt-secret", dir + "/mail"] {
            try? FileManager.default.removeItem(atPath: file)
        }
        let secret = ["SUPLASH_AUTH_JWT_SECRET": String(repeating: "s", count: 64)]
        assertRefused(
            try serve(dir, environment: secret), code: 65,
            mentions: [database, "is missing", "suplash.sqlite-position", "--init-empty"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: database), "no empty database was created")

        XCTAssertNil(try serve(dir, ["--init-empty"], environment: secret), "--init-empty starts over on purpose")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertTrue(names.contains { $0.hasPrefix("suplash.sqlite-position.orphaned-") }, "\(names)")
    }

    func testLostOrBadTokenSecretBesideAccountsIsRefused() throws {
        let dir = try usedDataDir()
        let secret = dir + "/jwt-secret"
        let original = try Data(contentsOf: URL(fileURLWithPath: secret))
        try FileManager.default.removeItem(atPath: secret)
        assertRefused(try serve(dir), code: 65, mentions: [secret, "is missing", "holds accounts", "--new-jwt-secret"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: secret), "no secret was generated")

        XCTAssertTrue(FileManager.default.createFile(atPath: secret, contents: Data("abcde".utf8)))
        assertRefused(try serve(dir), code: 65, mentions: [secret, "holds 5 bytes", "restore"])

        XCTAssertTrue(FileManager.default.createFile(atPath: secret, contents: original))
        XCTAssertNil(try serve(dir), "the restored secret starts")
        try FileManager.default.removeItem(atPath: secret)
        XCTAssertNil(try serve(dir, ["--new-jwt-secret"]), "a new secret on purpose")
        XCTAssertNotEqual(try Data(contentsOf: URL(fileURLWithPath: secret)), original)
    }

    func testTruncatedDatabaseIsRefusedByServeAndTheCLI() throws {
        let dir = try usedDataDir()
        let database = dir + "/suplash.sqlite"
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: database))
        let size = try handle.seekToEnd()
        try handle.truncate(atOffset: size / 2)
        try handle.close()
        assertRefused(try serve(dir), code: 65, mentions: [database, "truncated", "restore"])
        let (status, _, stderr) = try TestServer.runCLI(["migrate", "--data-dir", dir])
        XCTAssertEqual(status, 65, stderr)
        XCTAssertTrue(stderr.contains(database) && stderr.contains("truncated"), stderr)
        let backup = NSTemporaryDirectory() + "suplash-backup-" + UUID().uuidString
        let (backupStatus, _, backupErr) = try TestServer.runCLI(["backup", "--to", backup, "--data-dir", dir])
        XCTAssertEqual(backupStatus, 65, backupErr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: backup))
    }

    /// kill -9 leaves a WAL; the main file is cut short: the pages it lost are not in the
    /// WAL, so the full quick_check (forced whatever the size) finds the damage.
    func testTruncatedMainFileWithItsWALKeptIsRefused() throws {
        let server = try TestServer(dataDir: try usedDataDir())
        let user = try server.signUp()
        let note = String(repeating: "x", count: 200)
        for _ in 0..<60 {
            _ = try server.request(
                "POST", "/v1/water_logs/me/entries",
                json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date())), "note": .string(note)],
                token: user.token)
        }
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        let database = server.dataDir + "/suplash.sqlite"
        XCTAssertGreaterThan(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int), 0)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: database))
        let size = try handle.seekToEnd()
        XCTAssertGreaterThan(size, 16384)
        // The last 16 pages: tables the latest migrations created that these writes do not touch
        // (entry writes now also write the reminders table, the file's last pages).
        try handle.truncate(atOffset: max(4096, size - 16 * 4096))
        try handle.close()
        assertRefused(try serve(server.dataDir), code: 65, mentions: [database, "damaged", "restore"])
    }

    /// A read-only data dir (a read-only bind mount when running as root, whom modes do not stop).
    func testReadOnlyDataDirIsRefused() throws {
        let dir = try usedDataDir()
        var mounted = false
        if geteuid() == 0 {
            let (a, _, _) = try shell("/bin/mount", ["--bind", dir, dir])
            let (b, _, _) = a == 0 ? try shell("/bin/mount", ["-o", "remount,bind,ro", dir]) : (1, "", "")
            if a == 0, b != 0 { _ = try shell("/bin/umount", [dir]) }
            guard a == 0, b == 0 else { throw XCTSkip("cannot mount a read-only bind mount here") }
            mounted = true
        } else {
            chmod(dir, 0o500)
        }
        defer {
            if mounted { _ = try? shell("/bin/umount", [dir]) } else { chmod(dir, 0o700) }
        }
        assertRefused(try serve(dir), code: 77, mentions: [dir, "not writable"])
    }

    func testBackupDestinationErrorsNameTheFileAndWhatToDo() throws {
        let dir = try usedDataDir()
        let existing = dir + "/exists.sqlite"
        XCTAssertTrue(FileManager.default.createFile(atPath: existing, contents: Data("x".utf8)))
        let (s1, _, e1) = try TestServer.runCLI(["backup", "--to", existing, "--data-dir", dir])
        XCTAssertEqual(s1, 73, e1)
        XCTAssertTrue(e1.contains(existing) && e1.contains("exists") && e1.contains("never overwrites"), e1)
        let missing = dir + "/no-such-dir/b.sqlite"
        let (s2, _, e2) = try TestServer.runCLI(["backup", "--to", missing, "--data-dir", dir])
        XCTAssertEqual(s2, 73, e2)
        XCTAssertTrue(e2.contains(dir + "/no-such-dir") && e2.contains("does not exist") && e2.contains("mkdir"), e2)
        let empty = TestServer.makeDataDir()
        let (s3, _, e3) = try TestServer.runCLI(["backup", "--to", dir + "/b.sqlite", "--data-dir", empty])
        XCTAssertEqual(s3, 66, e3)
        XCTAssertTrue(e3.contains(empty + "/suplash.sqlite") && e3.contains("missing"), e3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: empty + "/suplash.sqlite"), "no empty database was created")
    }

    func shell(_ tool: String, _ arguments: [String]) throws -> (Int32, String, String) {
        try TestServer.run(tool, arguments)
    }

    /// kill -9 soon after the very first start leaves an empty main file and a WAL holding
    /// everything: a valid database, which must start (and keep its data).
    func testNeverCheckpointedDatabaseStillStarts() throws {
        let server = try TestServer()
        let user = try server.signUp()
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        let database = server.dataDir + "/suplash.sqlite"
        XCTAssertGreaterThan(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int), 0)
        let again = try TestServer(dataDir: server.dataDir)
        defer { again.stop() }
        XCTAssertEqual(try again.request("GET", "/v1/users/me", token: user.token).status, 200)
    }

    /// kill -9 during the very first start, before its first migration committed, leaves the database's own
    /// journal files beside a database that holds nothing (no secret, no position file yet):
    /// nothing was lost, so the next start must not be refused as "the database was lost".
    func testFirstStartKilledBeforeItsFirstCommitStartsAgain() throws {
        let fm = FileManager.default
        // Killed after the switch to WAL: an empty database, an empty WAL and its index.
        let walDir = TestServer.makeDataDir()
        let database = walDir + "/suplash.sqlite"
        let (status, _, _) = try shell("/usr/bin/sqlite3", [database, "PRAGMA journal_mode=WAL;"])
        guard status == 0 else { throw XCTSkip("sqlite3 is not installed") }
        XCTAssertTrue(fm.createFile(atPath: database + "-wal", contents: Data()))
        XCTAssertTrue(fm.createFile(atPath: database + "-shm", contents: Data(count: 32768)))
        XCTAssertNil(try serve(walDir), "a first start that never committed is no lost database")
        // Killed after the migrations table was created, before the first migration committed.
        let tableDir = TestServer.makeDataDir()
        let tableDatabase = tableDir + "/suplash.sqlite"
        _ = try shell(
            "/usr/bin/sqlite3",
            [
                tableDatabase,
                """
                PRAGMA journal_mode=WAL; CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
                checksum TEXT NOT NULL, applied_at TEXT NOT NULL);
                """,
            ])
        XCTAssertTrue(fm.createFile(atPath: tableDatabase + "-wal", contents: Data()))
        XCTAssertTrue(fm.createFile(atPath: tableDatabase + "-shm", contents: Data(count: 32768)))
        XCTAssertNil(try serve(tableDir), "an empty migrations table is no lost database")
        // Killed while switching to WAL: a zero-length database and a rollback journal.
        let journalDir = TestServer.makeDataDir()
        XCTAssertTrue(fm.createFile(atPath: journalDir + "/suplash.sqlite", contents: Data()))
        XCTAssertTrue(fm.createFile(atPath: journalDir + "/suplash.sqlite-journal", contents: Data(count: 512)))
        XCTAssertNil(try serve(journalDir), "a first start that never committed is no lost database")
    }

    /// A backup copied over the database while the old database's WAL is still beside it (the
    /// server was killed, or crashed): opening would replay that WAL onto the backup — the
    /// restore silently undone, or pages of two databases mixed. Refused, naming the WAL.
    func testABackupRestoredBesideTheOldDatabasesWALIsRefused() throws {
        let server = try TestServer()
        let user = try server.signUp()
        let backup = server.dataDir + "/restore-me.sqlite"
        let (status, _, err) = try TestServer.runCLI(["backup", "--to", backup, "--data-dir", server.dataDir])
        XCTAssertEqual(status, 0, err)
        let r = try server.request(
            "POST", "/v1/water_logs/me/entries",
            json: ["amountMl": 250, "loggedAt": .string(rfc3339(Date()))], token: user.token)
        XCTAssertEqual(r.status, 201)
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        let database = server.dataDir + "/suplash.sqlite"
        XCTAssertGreaterThan(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int), 0)
        try FileManager.default.removeItem(atPath: database)
        try FileManager.default.copyItem(atPath: backup, toPath: database)
        assertRefused(try serve(server.dataDir), code: 65, mentions: [database, "suplash.sqlite-wal", "backup"])

        for suffix in ["-wal", "-shm"] { try FileManager.default.removeItem(atPath: database + suffix) }
        XCTAssertNil(try serve(server.dataDir), "the backup alone is restored")
    }

    /// An empty SQLite database put in place of the lost one (beside the old state) is refused.
    func testEmptyStandInDatabaseBesideStateIsRefused() throws {
        let dir = try usedDataDir()
        let database = dir + "/suplash.sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        let (status, _, _) = try shell("/usr/bin/sqlite3", [database, "CREATE TABLE t(x); DROP TABLE t;"])
        guard status == 0 else { throw XCTSkip("sqlite3 is not installed") }
        assertRefused(try serve(dir), code: 65, mentions: [database, "holds no Suplash data", "restore"])
    }

    /// Runs `suplash-server arguments` with standard output and error pipes nobody reads (their
    /// read ends closed), through `env --default-signal=PIPE` so that an ignored SIGPIPE inherited
    /// from the test runner cannot hide a failure. Returns how it ended.
    func runWithClosedPipes(_ arguments: [String]) throws -> (Process.TerminationReason, Int32) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["--default-signal=PIPE", TestServer.executable] + arguments
        p.currentDirectoryURL = URL(fileURLWithPath: TestServer.packageRoot)
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try out.fileHandleForReading.close()
        try err.fileHandleForReading.close()
        try p.run()
        p.waitUntilExit()
        return (p.terminationReason, p.terminationStatus)
    }

    /// A CLI command whose standard output and error nobody reads any more (`migrate 2>&1 |
    /// head -1` once `head` has exited) still does its work and exits 0: it used to end with
    /// SIGPIPE (status 141) at its last write. A failing command still exits with its own status
    /// (64 for a usage error), not a trap on the write's `EPIPE`.
    func testACommandWritingToClosedPipesDoesItsWorkAndExitsWithItsStatus() throws {
        let dir = NSTemporaryDirectory() + "suplash-pipe-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let migrated = try runWithClosedPipes(["migrate", "--data-dir", dir])
        XCTAssertEqual(migrated.0, .exit, "ended by signal \(migrated.1)")
        XCTAssertEqual(migrated.1, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/suplash.sqlite"), "the migration ran")
        let unknown = try runWithClosedPipes(["no-such-command", "--data-dir", dir])
        XCTAssertEqual(unknown.0, .exit, "ended by signal \(unknown.1)")
        XCTAssertEqual(unknown.1, 64)
    }
}
