import Foundation
import XCTest

@testable import SuplashStorage

private struct Refused: Error, Equatable { let id: String }

/// A group transaction whose `COMMIT` fails (a full disk): no job's answer may rest on rows a
/// batch-mate wrote and that were rolled back with the group.
final class GroupCommitFailureTests: SingleTableDatabaseTestCase {
    private static let full = StorageError(code: 13, message: "injected: database or disk is full")  // SQLITE_FULL

    /// Queues `jobs` behind a held writer so they form one batch, fails `commitFailures`
    /// commits, and returns each job's result by name.
    private func runOneBatch(
        commitFailures: Int,
        _ jobs: [(String, @Sendable (WriteContext) throws -> String)]
    ) -> [String: Result<String, any Error>] {
        let db = self.db!
        let gate = Gate()
        let done = DispatchGroup()
        let results = Collector<(String, Result<String, any Error>)>()
        // Hold the writer with an exclusive job (it has no group commit to fail) so the
        // jobs queue up and run as one batch.
        let entered = Gate()
        done.enter()
        Thread {
            _ = try? db.writeExclusive { _ in
                entered.open()
                gate.wait()
            }
            done.leave()
        }.start()
        entered.wait()
        for (name, body) in jobs {
            done.enter()
            db.writeAsync(
                body,
                completion: { result in
                    results.append((name, result))
                    done.leave()
                })
        }
        waitUntil { db.pendingWriteCount == jobs.count }
        db.injectCommitFailures(Self.full, count: commitFailures)
        gate.open()
        done.wait()
        return Dictionary(uniqueKeysWithValues: results.all)
    }

    /// Inserts `n` unless it exists (then refuses, as a second create of one id does).
    private static func insertOnce(_ n: Int, as name: String) -> (String, @Sendable (WriteContext) throws -> String) {
        (
            name,
            { context in
                if try context.connection.scalarInt64("SELECT count(*) FROM t WHERE n = ?", [.int(n)]) != 0 {
                    throw Refused(id: name)
                }
                try context.connection.run("INSERT INTO t(n) VALUES (?)", [.int(n)])
                return "inserted"
            }
        )
    }

    private func storedRows() throws -> [Int64] {
        try db.read { try $0.query("SELECT n FROM t ORDER BY n").map { try $0.int64(0) } }
    }

    func testAJobThatFailedOnABatchMatesRolledBackRowIsReRunAlone() throws {
        let results = runOneBatch(
            commitFailures: 1,
            [
                Self.insertOnce(5, as: "first"),
                Self.insertOnce(5, as: "second"),  // sees "first"'s row: refused inside the group
            ])
        // "first" succeeded in the group, whose COMMIT failed: the storage error.
        XCTAssertEqual((results["first"].flatMap { try? $0.get() }), nil)
        if case .failure(let error as StorageError)? = results["first"] {
            XCTAssertEqual(error.kind, .full)
        } else {
            XCTFail("first: expected the commit's StorageError, got \(String(describing: results["first"]))")
        }
        // "second", run again alone, sees only committed rows: no row 5, so it inserts it.
        XCTAssertEqual(try results["second"]?.get(), "inserted")
        XCTAssertEqual(try storedRows(), [5])
        XCTAssertEqual(db.writerStatistics.rerunJobs, 1)
    }

    func testWhileCommitsKeepFailingEveryJobGetsTheStorageErrorNotABatchMatesAnswer() throws {
        let results = runOneBatch(
            commitFailures: 2,
            [
                Self.insertOnce(5, as: "first"),
                Self.insertOnce(5, as: "second"),
            ])
        for name in ["first", "second"] {
            guard case .failure(let error as StorageError)? = results[name] else {
                XCTFail("\(name): expected StorageError.full, got \(String(describing: results[name]))")
                continue
            }
            XCTAssertEqual(error.kind, .full, name)
        }
        XCTAssertEqual(try storedRows(), [])
    }

    func testAJobThatFailedBeforeAnyBatchMateWroteKeepsItsOwnAnswer() throws {
        try db.write { try $0.connection.run("INSERT INTO t(n) VALUES (1)") }
        let before = db.writerStatistics
        let results = runOneBatch(
            commitFailures: 1,
            [
                Self.insertOnce(1, as: "duplicate"),  // refused on a committed row: the truth
                Self.insertOnce(2, as: "new"),
                Self.insertOnce(3, as: "other"),
            ])
        XCTAssertEqual(
            results["duplicate"].flatMap { r in if case .failure(let e) = r { e as? Refused } else { nil } },
            Refused(id: "duplicate"))
        for name in ["new", "other"] {
            guard case .failure(let error as StorageError)? = results[name] else {
                XCTFail("\(name): expected StorageError.full, got \(String(describing: results[name]))")
                continue
            }
            XCTAssertEqual(error.kind, .full, name)
        }
        XCTAssertEqual(db.writerStatistics.rerunJobs - before.rerunJobs, 0)
        XCTAssertEqual(try storedRows(), [1])
    }

    func testAReRunJobThatFailsAgainReportsItsOwnErrorAndItsCallbacksDoNotRun() throws {
        let callbacks = Collector<String>()
        let results = runOneBatch(
            commitFailures: 1,
            [
                Self.insertOnce(7, as: "writer"),
                (
                    "always-fails",
                    { context in
                        context.afterCommit { callbacks.append("always-fails") }
                        throw Refused(id: "always-fails")
                    }
                ),
            ])
        guard case .failure(let error as Refused)? = results["always-fails"] else {
            return XCTFail("expected its own error, got \(String(describing: results["always-fails"]))")
        }
        XCTAssertEqual(error, Refused(id: "always-fails"))
        XCTAssertEqual(callbacks.all, [])
        XCTAssertEqual(try storedRows(), [])
    }
}
