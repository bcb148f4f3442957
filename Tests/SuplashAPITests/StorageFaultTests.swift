import Foundation
import SuplashAPI
import SuplashDomain
import XCTest

@testable import SuplashSQLiteStore
@testable import SuplashStorage

/// A failed group commit (a full disk at `COMMIT`, injected) on the SQLite store: no answer
/// rests on rows a batch-mate wrote and that were rolled back with the group.
final class GroupCommitFailureStoreTests: XCTestCase {
    private var db: SQLiteDatabase?

    override func tearDown() {
        db?.close()
        db = nil
    }

    private let now: Int64 = 1_790_000_000_000
    private let userID = "01930000-0000-7000-8000-000000000001"

    private func makeStore() throws -> SQLiteStore {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        _ = try store.createUser(
            UserProfile(id: userID, email: "a@example.test", displayName: nil, now: now),
            passwordHash: "x", session: session("s0", userID))
        return store
    }

    private func session(_ id: String, _ userID: String) -> NewSession {
        NewSession(id: id, userID: userID, refreshTokenHash: Array(id.utf8), createdAt: now, refreshExpiresAt: now + 1)
    }

    /// Runs `calls` on their own threads while the writer is held, so that they form one
    /// group; the group's commit fails with a full disk `commitFailures` times.
    private func oneGroup(
        _ store: SQLiteStore, commitFailures: Int,
        _ calls: [@Sendable () throws -> Void]
    ) -> [Result<Void, any Error>] {
        let db = store.database
        let gate = StoreGate()
        let entered = StoreGate()
        let done = DispatchGroup()
        done.enter()
        Thread {
            _ = try? db.writeExclusive { _ in
                entered.open()
                gate.wait()
            }
            done.leave()
        }.start()
        entered.wait()
        let results = ResultList()
        for (i, call) in calls.enumerated() {
            done.enter()
            Thread {
                results.set(i, Result { try call() })
                done.leave()
            }.start()
        }
        let deadline = Date().addingTimeInterval(10)
        while db.pendingWriteCount < calls.count && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        XCTAssertEqual(db.pendingWriteCount, calls.count, "the calls did not queue up behind the held writer")
        db.injectCommitFailures(StorageError(code: 13, message: "injected: database or disk is full"), count: commitFailures)
        gate.open()
        done.wait()
        return results.all(calls.count)
    }

    private func content(_ ml: Int) -> WaterEntryContent {
        WaterEntryContent(amountMl: ml, loggedAt: now - 60_000, source: .api)
    }

    private func isStorageFull(_ result: Result<Void, any Error>) -> Bool {
        if case .failure(let error) = result, error as? RepositoryError == .storage(.full) { return true }
        return false
    }

    private func failure(_ result: Result<Void, any Error>) -> RepositoryError? {
        if case .failure(let error) = result { return error as? RepositoryError }
        return nil
    }

    // MARK: Two identical DELETEs of one entry

    func testTwoDeletesOfOneEntryNeverAnswerNotFoundWhileTheEntryExists() throws {
        let store = try makeStore()
        let entryID = "0193aaaa-0000-7000-8000-00000000000e"
        _ = try store.createEntry(userID: userID, id: entryID, content: content(250), deviceID: nil, now: now)
        let userID = self.userID
        let now = self.now
        let delete: @Sendable () throws -> Void = {
            try store.deleteEntry(userID: userID, id: entryID, deviceID: nil, now: now + 1) { _ in true }
        }
        let results = oneGroup(store, commitFailures: 1, [delete, delete])
        // One delete lost its commit (503); the other, re-run alone, deleted the entry.
        XCTAssertEqual(results.filter(isStorageFull).count, 1, "\(results)")
        XCTAssertEqual(results.filter { (try? $0.get()) != nil }.count, 1, "\(results)")
        XCTAssertFalse(results.contains { failure($0) == .notFound }, "404 while the entry exists: \(results)")
        XCTAssertNil(try store.entry(userID: userID, id: entryID))
    }

    func testTwoDeletesWhileTheDiskStaysFullBothGetTheStorageProblem() throws {
        let store = try makeStore()
        let entryID = "0193aaaa-0000-7000-8000-00000000000f"
        _ = try store.createEntry(userID: userID, id: entryID, content: content(250), deviceID: nil, now: now)
        let userID = self.userID
        let now = self.now
        let delete: @Sendable () throws -> Void = {
            try store.deleteEntry(userID: userID, id: entryID, deviceID: nil, now: now + 1) { _ in true }
        }
        let results = oneGroup(store, commitFailures: 2, [delete, delete])
        XCTAssertEqual(results.filter(isStorageFull).count, 2, "\(results)")
        XCTAssertNotNil(try store.entry(userID: userID, id: entryID), "the entry still exists")
    }

    // MARK: Two POSTs of one new id

    func testTwoCreatesOfOneNewIDNeverAnswerEntryExistsForAnIDThatDoesNotExist() throws {
        let store = try makeStore()
        let entryID = "0193bbbb-0000-7000-8000-000000000001"
        let userID = self.userID
        let now = self.now
        let first = content(250)
        let second = content(300)  // other content: a second create would answer 409 entry_exists
        let results = oneGroup(
            store, commitFailures: 2,
            [
                { _ = try store.createEntry(userID: userID, id: entryID, content: first, deviceID: nil, now: now) },
                { _ = try store.createEntry(userID: userID, id: entryID, content: second, deviceID: nil, now: now) },
            ])
        XCTAssertFalse(
            results.contains { failure($0) == .conflict(code: "entry_exists") },
            "409 for an id that does not exist: \(results)")
        XCTAssertEqual(results.filter(isStorageFull).count, 2, "\(results)")
        XCTAssertNil(try store.entry(userID: userID, id: entryID))
    }

    // MARK: Two signups of one email

    func testTwoSignupsOfOneEmailNeverAnswerEmailTakenWithoutAnAccount() throws {
        let store = try makeStore()
        let now = self.now
        let email = "new@example.test"
        let ids = ["01930000-0000-7000-8000-0000000000a1", "01930000-0000-7000-8000-0000000000a2"]
        let calls: [@Sendable () throws -> Void] = ids.map { id in
            {
                _ = try store.createUser(
                    UserProfile(id: id, email: email, displayName: nil, now: now),
                    passwordHash: "x",
                    session: NewSession(
                        id: "s-" + id, userID: id,
                        refreshTokenHash: Array(id.utf8),
                        createdAt: now, refreshExpiresAt: now + 1))
            }
        }
        let results = oneGroup(store, commitFailures: 1, calls)
        XCTAssertFalse(
            results.contains { failure($0) == .emailTaken && (try? store.user(email: email)) == nil },
            "email_taken with no account: \(results)")
        // The second signup, re-run alone, created the account; the first got the storage problem.
        XCTAssertEqual(results.filter(isStorageFull).count, 1, "\(results)")
        XCTAssertNotNil(try store.user(email: email))
    }

    // MARK: The kind reaches the edge

    func testAFailedCommitReachesTheEdgeAsATransient503WithRetryAfter() throws {
        let store = try makeStore()
        let userID = self.userID
        let now = self.now
        let entry = content(100)
        let results = oneGroup(
            store, commitFailures: 1,
            [
                {
                    _ = try store.createEntry(
                        userID: userID, id: "0193cccc-0000-7000-8000-000000000001",
                        content: entry, deviceID: nil, now: now)
                }
            ])
        guard case .failure(let error) = results[0] else { return XCTFail("expected a failure") }
        let problem = APIError(error)
        XCTAssertEqual(problem.status, 503)
        XCTAssertEqual(problem.code, "unavailable")
        XCTAssertTrue(problem.headers.contains { $0.0 == "Retry-After" })
        XCTAssertEqual(store.health.totalsByKind.first { $0.0 == .full }?.1, 1)
    }
}

/// Gate for the held writer. `@unchecked Sendable`: `isOpen` guarded by `condition`.
private final class StoreGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    func wait() {
        condition.lock()
        while !isOpen { condition.wait() }
        condition.unlock()
    }
    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }
}

/// Results by index. `@unchecked Sendable`: `items` guarded by `lock`.
private final class ResultList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Int: Result<Void, any Error>] = [:]
    func set(_ i: Int, _ result: Result<Void, any Error>) { lock.withLock { items[i] = result } }
    func all(_ count: Int) -> [Result<Void, any Error>] {
        lock.withLock { (0..<count).map { items[$0] ?? .failure(RepositoryError.unavailable) } }
    }
}

/// Spec §2: the kind reaches the edge.
final class StorageProblemTests: XCTestCase {
    func testTransientKindsAnswerUnavailableWithRetryAfter() {
        for failure in [StorageFailure.full, .busy, .io, .shutdown, .connection] {
            let problem = APIError(RepositoryError.storage(failure))
            XCTAssertEqual(problem.status, 503, "\(failure)")
            XCTAssertEqual(problem.code, "unavailable", "\(failure)")
            XCTAssertTrue(problem.headers.contains { $0.0 == "Retry-After" }, "\(failure)")
        }
    }

    func testPermanentKindsAnswerStorageFailedWithoutRetryAfter() {
        for failure in [StorageFailure.corrupt, .readOnly] {
            let problem = APIError(RepositoryError.storage(failure))
            XCTAssertEqual(problem.status, 503, "\(failure)")
            XCTAssertEqual(problem.code, "storage_failed", "\(failure)")
            XCTAssertFalse(problem.headers.contains { $0.0 == "Retry-After" }, "\(failure)")
        }
    }

    func testSQLiteResultCodesMapToKinds() {
        let cases: [(Int32, StorageFailure?)] = [
            (13, .full), (11, .corrupt), (26, .corrupt), (8, .readOnly), (1544, .readOnly), (5, .busy), (6, .busy),
            (10, .io), (778, .io), (1034, .io), (14, .io), (2067, nil), (19, nil), (1, nil),
        ]
        for (code, failure) in cases {
            XCTAssertEqual(SQLiteStore.failure(StorageError(code: code, message: "").kind), failure, "code \(code)")
        }
    }

    /// A query that meets a damaged page reports `corrupt`: 503 `storage_failed`, and
    /// storage health turns unready (`/readyz`).
    func testAQueryOnADamagedDatabaseReportsCorruption() throws {
        let dir = TestServer.makeDataDir()
        let path = dir + "/damaged.sqlite"
        do {
            let db = try SQLiteDatabase(path: path, readers: 1)
            try db.write { context in
                try context.connection.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, pad BLOB)")
                for n in 0..<200 { try context.connection.run("INSERT INTO filler VALUES (?, zeroblob(500))", [.int(n)]) }
            }
            try db.checkpoint()
            db.close()
        }
        // Overwrite pages 2 and 3 (the table's b-tree) with garbage.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 4096)
        handle.write(Data(repeating: 0xA5, count: 8192))
        try handle.close()

        let db = try SQLiteDatabase(path: path, readers: 1)
        defer { db.close() }
        let store = SQLiteStore(database: db)
        XCTAssertThrowsError(try store.read { try $0.scalarInt64("SELECT sum(length(pad)) FROM filler") }) { error in
            XCTAssertEqual(error as? RepositoryError, .storage(.corrupt))
            XCTAssertEqual(APIError(error).code, "storage_failed")
        }
        XCTAssertEqual(store.health.problem, StorageHealth.Problem(failure: .corrupt, fromWriteProbe: false))
    }
}

/// `/readyz` follows the write probe at run time (spec §7), and the storage metrics count it.
final class ReadinessProbeTests: XCTestCase {
    func testReadyzTurns503WhileTheWriteProbeFailsAndRecovers() throws {
        let server = try TestServer(environment: ["SUPLASH_STORAGE_WRITE_PROBE_INTERVAL_SECONDS": "1"])
        defer { server.stop() }
        XCTAssertEqual(try server.request("GET", "/readyz").status, 200)
        // The probe's file made unusable: a directory in its place (open fails: an I/O error).
        let probePath = server.dataDir + "/suplash.sqlite-probe"
        try? FileManager.default.removeItem(atPath: probePath)
        try FileManager.default.createDirectory(atPath: probePath, withIntermediateDirectories: false)
        var response = try server.request("GET", "/readyz")
        let deadline = Date().addingTimeInterval(20)
        while response.status == 200 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            response = try server.request("GET", "/readyz")
        }
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(response.json?["code"]?.stringValue, "unavailable")
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(response.json?["detail"]?.stringValue, "Storage is not ready: io (the latest write probe failed).")
        let metrics = try server.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("suplash_storage_write_probe_ok 0"), metrics)
        XCTAssertTrue(metrics.contains("suplash_storage_ready 0"), metrics)
        XCTAssertTrue(metrics.contains("suplash_storage_errors_total{kind=\"full\"} 0"), metrics)
        XCTAssertFalse(metrics.contains("suplash_storage_errors_total{kind=\"io\"} 0"), metrics)

        try FileManager.default.removeItem(atPath: probePath)
        while response.status != 200 && Date() < deadline.addingTimeInterval(20) {
            Thread.sleep(forTimeInterval: 0.1)
            response = try server.request("GET", "/readyz")
        }
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(server.serverLog.contains("\"event\":\"storage_error_io\""), server.serverLog)
        XCTAssertTrue(server.serverLog.contains("\"event\":\"storage_write_probe_failed\""))
        XCTAssertTrue(server.serverLog.contains("\"event\":\"storage_write_probe_recovered\""))
        XCTAssertFalse(server.serverLog.contains("\"level\":\"error\""))
    }
}

/// The WAL position file end to end: a server killed under writes, then one flipped byte in
/// its WAL; the next start refuses and says why (docs/operations.md "The WAL position file").
final class WALPositionStartUpTests: XCTestCase {
    /// Runs `serve` on `dataDir`; returns (status, stderr) if it exits by itself, or nil if it
    /// started serving (then it is stopped). The 60 s guard only keeps a wrong server from hanging the suite.
    private func serveOnce(_ dataDir: String) throws -> (Int32, String)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.executable)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir]
        process.currentDirectoryURL = URL(fileURLWithPath: TestServer.packageRoot)
        let errPath = dataDir + "/serve-once.stderr"
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let listening = out.fileHandleForReading.availableData
        if !listening.isEmpty {  // "listening on …": it started
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    func testAFlippedByteInTheWALAfterAKillRefusesStartUpAndExplains() throws {
        let server = try TestServer()
        let user = try server.signUp()
        for i in 0..<30 {
            let r = try server.request(
                "POST", "/v1/water_logs/me/entries",
                json: [
                    "amountMl": .int(100 + i), "loggedAt": .string("2026-11-30T08:00:00Z"),
                    "source": .string("api"),
                ], token: user.token)
            XCTAssertEqual(r.status, 201, r.text)
        }
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        let dataDir = server.dataDir
        let wal = dataDir + "/suplash.sqlite-wal"
        let size = try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: wal))[.size] as? NSNumber).intValue
        let frames = (size - 32) / (24 + 4096)
        XCTAssertGreaterThan(frames, 4)
        let offset = 32 + (frames / 2) * (24 + 4096) + 24 + 2000
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: wal))
        try handle.seek(toOffset: UInt64(offset))
        let byte = try XCTUnwrap(handle.readData(ofLength: 1).first)
        try handle.seek(toOffset: UInt64(offset))
        handle.write(Data([byte ^ 0x10]))
        try handle.close()

        guard let (status, stderr) = try serveOnce(dataDir) else {
            return XCTFail("the server started on a database that lost acknowledged commits")
        }
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(stderr.contains("the database is behind the last acknowledged write"), stderr)
        XCTAssertTrue(stderr.contains("suplash.sqlite-position"), stderr)

        // The explicit way on: delete the side file (after restoring a backup, or accepting the loss).
        try FileManager.default.removeItem(atPath: dataDir + "/suplash.sqlite-position")
        XCTAssertNil(try serveOnce(dataDir), "starts once the operator removed the side file")
    }

    func testACleanRestartStartsAndTheSideFileIsOwnerOnly() throws {
        let server = try TestServer()
        _ = try server.signUp()
        XCTAssertEqual(server.stop(), 0)
        XCTAssertNil(try serveOnce(server.dataDir))
        let attributes = try FileManager.default.attributesOfItem(atPath: server.dataDir + "/suplash.sqlite-position")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }
}

/// The data dir's files and admin backups are owner-only (0600).
final class DataDirFileModeTests: XCTestCase {
    private func mode(_ path: String) -> Int? {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue
    }

    func testServerFilesAndAnAdminBackupAreOwnerOnly() throws {
        let server = try TestServer()
        defer { server.stop() }
        _ = try server.signUp()
        let (status, key, err) = try TestServer.runCLI(["admin-key", "create", "--name", "modes", "--data-dir", server.dataDir])
        XCTAssertEqual(status, 0, err)
        let backup = try server.request(
            "POST", "/v1/admin/backup",
            token: key.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(backup.status, 201, backup.text)
        let backupPath = try XCTUnwrap(backup.json?["path"]?.stringValue)
        for file in [
            "suplash.sqlite", "suplash.sqlite-wal", "suplash.sqlite-shm", "suplash.sqlite-position",
            "suplash.sqlite-probe", "jwt-secret",
        ] {
            XCTAssertEqual(mode(server.dataDir + "/" + file), 0o600, file)
        }
        XCTAssertEqual(mode(backupPath), 0o600, backupPath)
        let cliBackup = server.dataDir + "/cli-backup.sqlite"
        let (cliStatus, _, cliErr) = try TestServer.runCLI(["backup", "--to", cliBackup, "--data-dir", server.dataDir])
        XCTAssertEqual(cliStatus, 0, cliErr)
        XCTAssertEqual(mode(cliBackup), 0o600)
    }
}

/// A real full database (SQLite's `max_page_count`, the fault drill's stand-in for a full
/// disk): writes answer the `full` kind — 503 `unavailable` with `Retry-After` — and resume
/// once there is room, without a restart.
final class FullDatabaseStoreTests: XCTestCase {
    func testWritesOnAFullDatabaseReportFullAndResumeWhenThereIsRoom() throws {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/full.sqlite", readers: 1)
        defer { db.close() }
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        let now: Int64 = 1_790_000_000_000
        let userID = "01930000-0000-7000-8000-0000000000f1"
        _ = try store.createUser(
            UserProfile(id: userID, email: "full@example.test", displayName: nil, now: now),
            passwordHash: "x",
            session: NewSession(
                id: "s", userID: userID, refreshTokenHash: [1],
                createdAt: now, refreshExpiresAt: now + 1))
        try db.writeExclusive { context in
            let pages = try context.connection.scalarInt64("PRAGMA page_count") ?? 0
            _ = try context.connection.scalar("PRAGMA max_page_count = \(pages + 2)")
        }
        var created = 0
        var failure: (any Error)?
        while failure == nil && created < 10_000 {
            do {
                _ = try store.createEntry(
                    userID: userID, id: UUID().uuidString.lowercased(),
                    content: WaterEntryContent(
                        amountMl: 250, loggedAt: now, source: .api,
                        note: String(repeating: "n", count: 400)),
                    deviceID: nil, now: now)
                created += 1
            } catch {
                failure = error
            }
        }
        let error = try XCTUnwrap(failure, "the database never filled up")
        XCTAssertEqual(error as? RepositoryError, .storage(.full))
        let problem = APIError(error)
        XCTAssertEqual(problem.code, "unavailable")
        XCTAssertTrue(problem.headers.contains { $0.0 == "Retry-After" })
        XCTAssertGreaterThan(store.health.totalsByKind.first { $0.0 == .full }?.1 ?? 0, 0)
        XCTAssertNil(store.health.problem, "a full disk seen by a query alone does not fail /readyz (the probe decides)")

        try db.writeExclusive { _ = try $0.connection.scalar("PRAGMA max_page_count = 1073741823") }
        _ = try store.createEntry(
            userID: userID, id: UUID().uuidString.lowercased(),
            content: WaterEntryContent(amountMl: 250, loggedAt: now, source: .api),
            deviceID: nil, now: now)
    }
}
