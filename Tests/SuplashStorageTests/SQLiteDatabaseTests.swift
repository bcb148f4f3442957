import CSQLite
import Foundation
import XCTest

@testable import SuplashStorage

private struct JobFailure: Error, Equatable { let id: Int }

final class SQLiteDatabaseTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var db: SQLiteDatabase!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        try db.write { try $0.connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL UNIQUE)") }
    }

    override func tearDown() {
        db?.close()
        db = nil
        directory = nil
    }

    func testWriterPragmasAreWALAndSynchronousFull() throws {
        XCTAssertEqual(try db.write { try $0.connection.scalarInt64("PRAGMA synchronous") }, 2)
        XCTAssertEqual(try db.write { try $0.connection.scalar("PRAGMA journal_mode") }, .text("wal"))
        XCTAssertEqual(try db.write { try $0.connection.scalarInt64("PRAGMA foreign_keys") }, 1)
        XCTAssertEqual(try db.write { try $0.connection.scalarInt64("PRAGMA busy_timeout") }, 5000)
        XCTAssertEqual(try db.read { try $0.scalarInt64("PRAGMA foreign_keys") }, 1)
        XCTAssertEqual(try db.read { try $0.scalarInt64("PRAGMA query_only") }, 1)
    }

    /// `VACUUM` builds its copy of the database in a temporary file, not in memory: SQLite's own
    /// allocations peak far below the database's size (24 MiB here), and the connection's
    /// temporary tables are back in memory afterwards.
    func testVacuumCopiesThroughATemporaryFileNotTheHeap() throws {
        try db.write { context in
            try context.connection.execute(
                """
                CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB NOT NULL);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
                INSERT INTO big (b) SELECT randomblob(8000) FROM n;
                """)
        }
        let used = sqlite3_memory_used()
        _ = sqlite3_memory_highwater(1)
        try db.vacuum()
        let peak = sqlite3_memory_highwater(0)
        XCTAssertLessThan(peak - used, 12 << 20, "VACUUM's copy of a 24 MiB database was held in memory")
        XCTAssertEqual(try db.write { try $0.connection.scalarInt64("PRAGMA temp_store") }, 2)
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM big") }, 3000)
    }

    func testWriteReturnsValueAndIsVisibleToReaders() throws {
        let id = try db.write { context in
            try context.connection.run("INSERT INTO t(n) VALUES (?)", [7])
            return context.connection.lastInsertRowID
        }
        XCTAssertEqual(id, 1)
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT n FROM t WHERE id = ?", [.integer(id)]) }, 7)
    }

    func testReadersAreReadOnly() throws {
        assertStorageError(.readOnly) { try db.read { try $0.run("INSERT INTO t(n) VALUES (1)") } }
        assertStorageError(.readOnly) { try db.read { try $0.execute("DROP TABLE t") } }
    }

    func testConcurrentWritesFromManyThreadsAreAllVisible() throws {
        let db = self.db!
        let errors = Collector<String>()
        onThreads(64) { thread in
            for k in 0..<10 {
                do {
                    try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (?)", [.int(thread * 1000 + k)]) }
                    // Each writer then reads its own row back through a reader.
                    let seen = try db.read { try $0.scalarInt64("SELECT count(*) FROM t WHERE n = ?", [.int(thread * 1000 + k)]) }
                    if seen != 1 { errors.append("row \(thread)/\(k) not visible") }
                } catch {
                    errors.append(String(describing: error))
                }
            }
        }
        XCTAssertEqual(errors.all, [])
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 640)
        let stats = db.writerStatistics
        XCTAssertEqual(stats.jobs, 641)  // + the CREATE TABLE of setUp
        XCTAssertEqual(stats.failedJobs, 0)
    }

    func testAThrowingJobRollsBackAloneWhileBatchMatesCommit() throws {
        let db = self.db!
        let gate = Gate()
        let results = Collector<(Int, Result<Int64, any Error>)>()
        let done = DispatchGroup()
        // Hold the writer so the next jobs queue up and run as one batch.
        done.enter()
        holdWriter(db, until: gate, done: done)
        for i in 0..<10 {
            done.enter()
            db.writeAsync(
                { context in
                    try context.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)])
                    if i % 3 == 0 { throw JobFailure(id: i) }  // after writing: the write must vanish
                    return context.connection.lastInsertRowID
                },
                completion: { result in
                    results.append((i, result))
                    done.leave()
                })
        }
        // A constraint violation inside a batch, too.
        done.enter()
        db.writeAsync(
            { try $0.connection.run("INSERT INTO t(n) VALUES (1)") },
            completion: { result in
                if case .failure(let error as StorageError) = result, error.kind == .constraintUnique {
                } else {
                    results.append((-1, .failure(JobFailure(id: -1))))
                }
                done.leave()
            })
        waitUntil { db.pendingWriteCount == 11 }
        let before = db.writerStatistics
        gate.open()
        done.wait()

        let after = db.writerStatistics
        XCTAssertEqual(after.commits - before.commits, 2, "the gate job's batch, then one batch of 11")
        XCTAssertEqual(after.largestBatch, 11)
        for (i, result) in results.all {
            switch result {
            case .success: XCTAssertNotEqual(i % 3, 0)
            case .failure(let error): XCTAssertEqual(error as? JobFailure, JobFailure(id: i))
            }
        }
        XCTAssertEqual(results.all.count, 10)
        let stored = try db.read { try $0.query("SELECT n FROM t ORDER BY n").map { try $0.int64(0) } }
        XCTAssertEqual(stored, [1, 2, 4, 5, 7, 8])
    }

    func testGroupCommitSharesCommitsUnderConcurrency() throws {
        let db = self.db!
        let gate = Gate()
        let gateDone = DispatchGroup()
        gateDone.enter()
        holdWriter(db, until: gate, done: gateDone)
        let before = db.writerStatistics
        let writers = 200
        let failures = Collector<String>()
        let finished = DispatchGroup()
        finished.enter()
        DispatchQueue.global().async {
            onThreads(writers) { i in
                do {
                    try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)]) }
                } catch {
                    failures.append(String(describing: error))
                }
            }
            finished.leave()
        }
        waitUntil { db.pendingWriteCount == writers }  // all 200 blocked in write(), queued
        gate.open()
        finished.wait()
        gateDone.wait()

        XCTAssertEqual(failures.all, [])
        let after = db.writerStatistics
        let jobs = after.jobs - before.jobs
        let commits = after.commits - before.commits
        XCTAssertEqual(jobs, writers + 1)
        XCTAssertGreaterThan(jobs, commits)
        XCTAssertLessThanOrEqual(commits, 2, "200 queued jobs fit one batch (≤ 256)")
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, Int64(writers))
    }

    func testBatchSizeIsBounded() throws {
        db.close()
        db = try SQLiteDatabase(path: directory.file("small-batch.sqlite"), maxBatchSize: 4)
        let db = self.db!
        try db.write { try $0.connection.execute("CREATE TABLE t (n INTEGER)") }
        let gate = Gate()
        let done = DispatchGroup()
        done.enter()
        holdWriter(db, until: gate, done: done)
        for i in 0..<10 {
            done.enter()
            db.writeAsync({ try $0.connection.run("INSERT INTO t VALUES (?)", [.int(i)]) }, completion: { _ in done.leave() })
        }
        waitUntil { db.pendingWriteCount == 10 }
        gate.open()
        done.wait()
        XCTAssertEqual(db.writerStatistics.largestBatch, 4)
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 10)
    }

    func testAfterCommitRunsAfterCommitAndNotForRolledBackJobs() throws {
        let db = self.db!
        let events = Collector<String>()
        let done = DispatchGroup()
        let gate = Gate()
        done.enter()
        holdWriter(db, until: gate, done: done)
        done.enter()
        db.writeAsync(
            { context in
                try context.connection.run("INSERT INTO t(n) VALUES (100)")
                context.afterCommit {
                    // Runs after the commit: a reader already sees the row.
                    let visible = (try? db.read { try $0.scalarInt64("SELECT count(*) FROM t WHERE n = 100") }) ?? -1
                    events.append("callback ok visible=\(visible)")
                }
            },
            completion: { result in
                events.append("completion ok \((try? result.get()) != nil)")
                done.leave()
            })
        done.enter()
        db.writeAsync(
            { context in
                context.afterCommit { events.append("callback of failed job") }
                throw JobFailure(id: 1)
            },
            completion: { _ in
                events.append("completion failed")
                done.leave()
            })
        waitUntil { db.pendingWriteCount == 2 }
        gate.open()
        done.wait()
        waitUntil { events.all.count == 3 }
        XCTAssertEqual(events.all, ["completion ok true", "completion failed", "callback ok visible=1"])

        // A blocking write from a callback would deadlock: it is refused.
        let refused = Collector<StorageError.Kind>()
        try db.write { context in
            context.afterCommit {
                do { try db.write { _ in } } catch let error as StorageError { refused.append(error.kind) } catch {}
            }
        }
        waitUntil { refused.all.count == 1 }
        XCTAssertEqual(refused.all, [.misuse])
    }

    func testGroupJobsCannotRunTransactionControl() throws {
        let db = self.db!
        let gate = Gate()
        let done = DispatchGroup()
        let kinds = Collector<String>()
        done.enter()
        holdWriter(db, until: gate, done: done)
        let statements = ["COMMIT", "ROLLBACK", "BEGIN", "SAVEPOINT x", "RELEASE suplash_job", "END"]
        for (i, sql) in statements.enumerated() {
            done.enter()
            db.writeAsync(
                { context in
                    try context.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)])
                    if i % 2 == 0 { try context.connection.execute(sql) } else { try context.connection.run(sql) }
                },
                completion: { result in
                    if case .failure(let error as StorageError) = result { kinds.append("\(error.kind)") }
                    done.leave()
                })
        }
        done.enter()
        db.writeAsync(
            { try $0.connection.run("INSERT INTO t(n) VALUES (100)") },
            completion: { result in
                if case .success = result { kinds.append("ok") }
                done.leave()
            })
        waitUntil { db.pendingWriteCount == statements.count + 1 }
        gate.open()
        done.wait()
        XCTAssertEqual(kinds.all, Array(repeating: "misuse", count: statements.count) + ["ok"])
        XCTAssertEqual(try db.read { try $0.query("SELECT n FROM t").map { try $0.int64(0) } }, [100])
        // Exclusive jobs may; and a plain writer connection still may.
        try db.writeExclusive { try $0.connection.execute("BEGIN; INSERT INTO t(n) VALUES (101); COMMIT;") }
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 2)
    }

    func testReadersDoNotWaitForTheWriter() throws {
        let db = self.db!
        try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (1)") }
        let gate = Gate()
        let entered = Gate()
        let done = DispatchGroup()
        done.enter()
        // A job holds the write transaction open with an uncommitted row.
        db.writeAsync(
            { context in
                try context.connection.run("INSERT INTO t(n) VALUES (2)")
                entered.open()
                gate.wait()
            }, completion: { _ in done.leave() })
        entered.wait()
        // Readers run meanwhile and see only committed data.
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 1)
        gate.open()
        done.wait()
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 2)
    }

    func testReaderPoolBlocksOnlyWhenAllReadersAreBusy() throws {
        db.close()
        db = try SQLiteDatabase(path: directory.file("pool.sqlite"), readers: 2)
        let db = self.db!
        XCTAssertEqual(db.readerCount, 2)
        let gate = Gate()
        let inside = Collector<Int>()
        let finished = DispatchGroup()
        for i in 0..<3 {
            finished.enter()
            Thread {
                _ = try? db.read { _ in
                    inside.append(i)
                    if i < 2 { gate.wait() }
                }
                finished.leave()
            }.start()
            if i < 2 { waitUntil { inside.all.count == i + 1 } }
        }
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(inside.all.count, 2, "the third reader waits for a free connection")
        gate.open()
        finished.wait()
        XCTAssertEqual(inside.all.count, 3)
    }

    func testReadLeavesNoOpenTransaction() throws {
        try db.read { try $0.execute("BEGIN; SELECT * FROM t;") }
        XCTAssertFalse(try db.read { $0.isInTransaction })
    }

    func testExclusiveJobRunsOutsideTheGroupTransaction() throws {
        let inTransaction = try db.writeExclusive { $0.connection.isInTransaction }
        XCTAssertFalse(inTransaction)
        XCTAssertTrue(try db.write { $0.connection.isInTransaction })
        assertStorageError(.misuse) { try db.writeExclusive { try $0.connection.execute("BEGIN") } }
        // The writer is still usable.
        try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (5)") }
    }

    func testCheckpointTruncatesTheWAL() throws {
        for i in 0..<50 { try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)]) } }
        XCTAssertGreaterThan(fileSize(directory.file("app.sqlite-wal")) ?? 0, 0)
        let bytesBefore = try db.databaseBytes
        let result = try db.checkpoint()
        XCTAssertFalse(result.busy)
        XCTAssertEqual(fileSize(directory.file("app.sqlite-wal")), 0)
        let bytesAfter = try db.databaseBytes
        XCTAssertGreaterThan(bytesAfter, 0)
        XCTAssertGreaterThanOrEqual(bytesBefore, bytesAfter)
        let pageSize = try db.read { try $0.scalarInt64("PRAGMA page_size") } ?? 0
        XCTAssertEqual(bytesAfter % pageSize, 0)
    }

    func testBackupProducesAReadableCopy() throws {
        for i in 0..<100 { try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)]) } }
        let target = directory.file("backup.sqlite")
        let bytes = try db.backup(to: target)
        XCTAssertGreaterThan(bytes, 0)
        XCTAssertNil(fileSize(target + ".partial"))
        XCTAssertNil(fileSize(target + "-wal"))
        let copy = try SQLiteConnection(path: target, role: .reader)
        defer { copy.close() }
        XCTAssertEqual(try copy.scalarInt64("SELECT count(*) FROM t"), 100)
        XCTAssertEqual(try copy.scalar("PRAGMA journal_mode"), .text("delete"))
        XCTAssertEqual(try copy.scalar("PRAGMA integrity_check"), .text("ok"))
        // Refuses to overwrite.
        assertStorageError(.misuse) { try db.backup(to: target) }
    }

    func testCloseDrainsQueuedJobsThenRefusesWork() throws {
        let db = self.db!
        let completed = Collector<Bool>()
        for i in 0..<20 {
            db.writeAsync(
                { try $0.connection.run("INSERT INTO t(n) VALUES (?)", [.int(i)]) },
                completion: { completed.append((try? $0.get()) != nil) })
        }
        db.close()
        XCTAssertEqual(completed.all.count, 20)
        XCTAssertTrue(completed.all.allSatisfy { $0 })
        assertStorageError(.closed) { try db.write { _ in 1 } }
        assertStorageError(.closed) { try db.read { _ in 1 } }
        db.close()  // idempotent
        let reopened = try SQLiteDatabase(path: directory.file("app.sqlite"))
        defer { reopened.close() }
        XCTAssertEqual(try reopened.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 20)
    }

    /// Another process (here: another connection) holding the write lock: `BEGIN IMMEDIATE`
    /// waits up to the busy timeout, then fails the whole batch with `.busy`.
    func testBusyTimeoutWithAnotherWriter() throws {
        let path = directory.file("app.sqlite")
        // Held briefly by another connection on another thread: the write waits, then succeeds.
        let locked = Gate()
        let holder = Thread {
            guard let other = try? SQLiteConnection(path: path, role: .writer) else { return locked.open() }
            try? other.execute("BEGIN IMMEDIATE; INSERT INTO t(n) VALUES (1000);")
            locked.open()
            Thread.sleep(forTimeInterval: 0.3)
            try? other.execute("COMMIT")
            other.close()
        }
        holder.start()
        locked.wait()
        let started = Date()
        try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (1001)") }
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.1, "the write waited for the other writer")
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 2)

        let other = try SQLiteConnection(path: path, role: .writer)
        defer { other.close() }
        // Held past a short timeout: busy.
        db.close()
        db = try SQLiteDatabase(path: path, busyTimeoutMs: 100)
        let db = self.db!
        try other.execute("BEGIN IMMEDIATE")
        assertStorageError(.busy) { try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (1002)") } }
        // Readers are not blocked by the other writer.
        XCTAssertEqual(try db.read { try $0.scalarInt64("SELECT count(*) FROM t") }, 2)
        try other.execute("ROLLBACK")
        try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (1002)") }
        XCTAssertEqual(db.writerStatistics.failedJobs, 1)
    }

    func testInvalidReaderCount() {
        assertStorageError(.misuse) { try SQLiteDatabase(path: directory.file("x.sqlite"), readers: 0) }
    }
}

/// A latch the writer thread blocks on. `@unchecked Sendable`: `isOpen` guarded by `condition`.
final class Gate: @unchecked Sendable {
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

/// Submits a job that blocks the writer thread until `gate` opens; returns once it runs,
/// so that jobs submitted afterwards queue up and form the next batch. `done` is left after.
func holdWriter(_ db: SQLiteDatabase, until gate: Gate, done: DispatchGroup) {
    let entered = Gate()
    db.writeAsync(
        { _ in
            entered.open()
            gate.wait()
        }, completion: { _ in done.leave() })
    entered.wait()
}

/// Polls `condition` every millisecond for up to 10 s.
func waitUntil(_ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) {
    let deadline = Date().addingTimeInterval(10)
    while !condition() {
        if Date() > deadline {
            XCTFail("condition not reached within 10 s", file: file, line: line)
            return
        }
        Thread.sleep(forTimeInterval: 0.001)
    }
}
