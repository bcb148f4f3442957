import CSQLite
import Foundation

/// Statistics of the writer thread, cumulative since the database was opened.
public struct WriterStatistics: Sendable, Equatable {
    /// Group transactions committed successfully (one fsync each in WAL + `synchronous=FULL`).
    public var commits: Int = 0
    /// Group jobs run (successful or not); excludes exclusive jobs.
    public var jobs: Int = 0
    /// Group jobs that threw (rolled back to their savepoint) or whose commit failed.
    public var failedJobs: Int = 0
    /// Exclusive jobs run (`writeExclusive`, `checkpoint`, migrations).
    public var exclusiveJobs: Int = 0
    /// The largest number of jobs that shared one transaction.
    public var largestBatch: Int = 0
    /// Group jobs re-run alone because their group transaction did not commit and they had
    /// failed after a batch-mate's uncommitted write (see `SQLiteDatabase.write`).
    public var rerunJobs: Int = 0
}

/// A queued unit of work for the writer thread, type-erased.
struct WriterJob: Sendable {
    /// Runs outside the group transaction, alone.
    let exclusive: Bool
    /// Runs the body on the writer thread; returns whether it succeeded and how to complete it.
    let run: @Sendable (WriteContext) -> WriterOutcome
    /// Completes the job with `error` without running it.
    let fail: @Sendable (any Error) -> Void
}

/// The result of running a job body, completed later (after the commit).
struct WriterOutcome {
    let succeeded: Bool
    /// Completes the job. `commitError == nil`: the work is durable (or, for a failed job,
    /// its own error is reported). Otherwise the job gets `commitError` if it had succeeded.
    let complete: (_ commitError: (any Error)?) -> Void
}

/// The single writer thread, its queue and its connection.
///
/// `@unchecked Sendable`: `queue`, `state`, `writerThread` and `statistics` are guarded by
/// `condition`; `connection` is touched only by the writer thread (it is handed over before
/// the thread starts and closed by that thread when it stops).
final class Writer: @unchecked Sendable {
    private enum State { case running, closing, finished }

    private let condition = NSCondition()
    private var queue: [WriterJob] = []
    private var state: State = .running
    private var writerThread: pthread_t?
    private var statistics = WriterStatistics()

    private let connection: SQLiteConnection
    private let maxBatchSize: Int
    /// The side file of the last acknowledged change position, once start-up installed it
    /// (`SQLiteDatabase.trackAcknowledgedPosition`). Touched only on the writer thread.
    var positionFile: AcknowledgedPositionFile?

    init(connection: SQLiteConnection, maxBatchSize: Int) {
        self.connection = connection
        self.maxBatchSize = max(1, maxBatchSize)
    }

    func start() {
        let thread = Thread { [self] in self.runLoop() }
        thread.name = "suplash-sqlite-writer"
        thread.start()
    }

    // MARK: - Caller side

    /// Queues `job`, or fails it at once if the writer is closing.
    func submit(_ job: WriterJob) {
        condition.lock()
        guard state == .running else {
            condition.unlock()
            job.fail(StorageError.closed())
            return
        }
        queue.append(job)
        condition.unlock()
        // After unlocking: the writer, once woken, takes the lock without blocking on it.
        condition.signal()
    }

    /// `true` when called on the writer thread.
    var isWriterThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let writerThread else { return false }
        return pthread_equal(writerThread, pthread_self()) != 0
    }

    var snapshot: WriterStatistics {
        condition.lock()
        defer { condition.unlock() }
        return statistics
    }

    var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    /// Stops accepting jobs, lets the writer drain the queue, and (unless called on the
    /// writer thread itself) waits until it has closed its connection and exited.
    func close() {
        condition.lock()
        if state == .running {
            state = .closing
            condition.broadcast()
        }
        let onWriter = writerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        if !onWriter {
            while state != .finished { condition.wait() }
        }
        condition.unlock()
    }

    // MARK: - Writer thread

    private func runLoop() {
        condition.lock()
        writerThread = pthread_self()
        condition.unlock()

        while let batch = nextBatch() {
            if batch.count == 1, batch[0].exclusive {
                runExclusive(batch[0])
            } else {
                runGroup(batch)
            }
        }
        try? positionFile?.sync()
        positionFile = nil
        connection.close()

        condition.lock()
        state = .finished
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for work; returns every waiting group job up to `maxBatchSize` (stopping at an
    /// exclusive job, which always runs alone, in queue order), or `nil` once closed and drained.
    private func nextBatch() -> [WriterJob]? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && state == .running { condition.wait() }
        guard !queue.isEmpty else { return nil }
        if queue[0].exclusive {
            return [queue.removeFirst()]
        }
        var count = 0
        while count < queue.count, count < maxBatchSize, !queue[count].exclusive { count += 1 }
        let batch = Array(queue[0..<count])
        queue.removeFirst(count)
        return batch
    }

    private func record(_ update: (inout WriterStatistics) -> Void) {
        condition.lock()
        update(&statistics)
        condition.unlock()
    }

    private func runExclusive(_ job: WriterJob) {
        let context = WriteContext(connection: connection)
        let outcome = job.run(context)
        var leftover: (any Error)?
        if connection.isInTransaction {
            try? connection.runTransactionControl(.rollback)
            leftover = StorageError.misuse("an exclusive write job left a transaction open; it was rolled back")
        }
        record { $0.exclusiveJobs += 1 }
        outcome.complete(leftover)
        if outcome.succeeded, leftover == nil {
            for callback in context.callbacks { callback() }
        }
    }

    /// Group commit: one `BEGIN IMMEDIATE`, one `SAVEPOINT` per job, one `COMMIT`, then every
    /// job is completed, then the committed jobs' `afterCommit` callbacks run. If SQLite ends
    /// the transaction on its own (e.g. `SQLITE_FULL`), the jobs run so far fail with that
    /// error and the rest continue in a fresh transaction.
    ///
    /// When the group transaction does not commit, no answer may rest on rows that another
    /// job of the group wrote and that were rolled back with it:
    /// - a job whose body succeeded gets the commit's storage error (its work is gone; a
    ///   retry may help). It is not re-run: the cause (a full disk, a lost lock) usually
    ///   persists, and another commit attempt per job would only delay the queue behind it.
    /// - a job whose body failed after an earlier job of the same transaction had succeeded
    ///   may have failed *because of* that job's rows (a second `DELETE` of one entry sees the
    ///   tombstone and answers 404). It is re-run alone in its own transaction, so its answer
    ///   rests on committed rows only: failing again, its own error is the truth; succeeding,
    ///   it commits (or gets that commit's error).
    /// - a job that failed with no successful job before it in the transaction saw committed
    ///   rows only: its own error stands.
    private func runGroup(_ batch: [WriterJob]) {
        var index = 0
        while index < batch.count {
            do {
                try connection.runTransactionControl(.beginImmediate)
            } catch {
                for job in batch[index...] { job.fail(error) }
                record {
                    $0.jobs += batch.count - index
                    $0.failedJobs += batch.count - index
                }
                return
            }
            let start = index
            var ran: [RanJob] = []
            var transactionError: (any Error)?
            var anySucceeded = false

            while index < batch.count {
                let job = batch[index]
                index += 1
                do {
                    try connection.runTransactionControl(.savepoint)
                } catch {
                    ran.append(
                        RanJob(
                            job: job, outcome: WriterOutcome(succeeded: false) { _ in job.fail(error) },
                            context: WriteContext(connection: connection), sawUncommittedRows: false))
                    if !connection.isInTransaction {
                        transactionError = error
                        break
                    }
                    continue
                }
                let context = WriteContext(connection: connection)
                connection.allowsTransactionControl = false
                let outcome = job.run(context)
                connection.allowsTransactionControl = true
                let entry = RanJob(job: job, outcome: outcome, context: context, sawUncommittedRows: anySucceeded)
                guard connection.isInTransaction else {
                    // The job's statement made SQLite roll back everything (or the job ran
                    // transaction control itself).
                    transactionError = Self.endedBySQLite(connection, "the group transaction was rolled back by SQLite")
                    ran.append(entry)
                    break
                }
                do {
                    if !outcome.succeeded {
                        try connection.runTransactionControl(.rollbackToSavepoint)
                    }
                    try connection.runTransactionControl(.release)
                    ran.append(entry)
                    if outcome.succeeded { anySucceeded = true }
                } catch {
                    transactionError = error
                    ran.append(entry)
                    break
                }
            }

            var commitError = transactionError
            if commitError == nil {
                commitError = commit()
            }
            if commitError != nil, connection.isInTransaction {
                try? connection.runTransactionControl(.rollback)
            }

            if let commitError {
                record {
                    $0.jobs += index - start
                    $0.largestBatch = max($0.largestBatch, index - start)
                }
                for entry in ran {
                    if entry.outcome.succeeded {
                        record { $0.failedJobs += 1 }
                        entry.outcome.complete(commitError)
                    } else if entry.sawUncommittedRows {
                        runAlone(entry.job)
                    } else {
                        record { $0.failedJobs += 1 }
                        entry.outcome.complete(nil)
                    }
                }
            } else {
                record {
                    $0.jobs += index - start
                    $0.failedJobs += ran.filter { !$0.outcome.succeeded }.count
                    $0.commits += 1
                    $0.largestBatch = max($0.largestBatch, index - start)
                }
                for entry in ran { entry.outcome.complete(nil) }
                for entry in ran where entry.outcome.succeeded {
                    for callback in entry.context.callbacks { callback() }
                }
            }
        }
    }

    /// A group job that has run, with what it saw.
    private struct RanJob {
        let job: WriterJob
        let outcome: WriterOutcome
        let context: WriteContext
        /// An earlier job of the same transaction had succeeded, so this job's body may have
        /// read rows that are rolled back if the transaction does not commit.
        let sawUncommittedRows: Bool
    }

    /// Re-runs a group job alone in its own transaction after its group failed to commit
    /// (see `runGroup`), and completes it.
    private func runAlone(_ job: WriterJob) {
        record { $0.rerunJobs += 1 }
        do {
            try connection.runTransactionControl(.beginImmediate)
        } catch {
            record { $0.failedJobs += 1 }
            job.fail(error)
            return
        }
        let context = WriteContext(connection: connection)
        connection.allowsTransactionControl = false
        let outcome = job.run(context)
        connection.allowsTransactionControl = true
        guard outcome.succeeded else {
            if connection.isInTransaction { try? connection.runTransactionControl(.rollback) }
            record { $0.failedJobs += 1 }
            outcome.complete(nil)
            return
        }
        var commitError: (any Error)?
        if connection.isInTransaction {
            commitError = commit()
        } else {
            commitError = Self.endedBySQLite(connection, "the job's transaction was rolled back by SQLite")
        }
        if commitError != nil, connection.isInTransaction {
            try? connection.runTransactionControl(.rollback)
        }
        record {
            if commitError == nil { $0.commits += 1 } else { $0.failedJobs += 1 }
        }
        outcome.complete(commitError)
        if commitError == nil {
            for callback in context.callbacks { callback() }
        }
    }

    /// The error for a transaction SQLite rolled back by itself: the connection's last
    /// failure code (e.g. `SQLITE_FULL`, so the answer names the cause), else `SQLITE_ABORT`.
    private static func endedBySQLite(_ connection: SQLiteConnection, _ message: String) -> StorageError {
        let code = connection.lastExtendedResultCode
        let primary = code & 0xff
        guard primary != SQLITE_OK, primary != SQLITE_ROW, primary != SQLITE_DONE else {
            return StorageError(code: SQLITE_ABORT, kind: .other, message: message)
        }
        return StorageError(code: code, message: message)
    }

    /// Runs `COMMIT` (or fails with an injected error in tests); nil on success. With the
    /// WAL position file installed, the change position is read inside the transaction and
    /// recorded only once `COMMIT` returned (the WAL is fsync'd): the file is never ahead.
    private func commit() -> (any Error)? {
        #if DEBUG
            if let injected = takeInjectedCommitFailure() { return injected }
        #endif
        let position = positionFile.flatMap { SQLiteDatabase.currentPosition(connection, $0.positionSQL) }
        do {
            try connection.runTransactionControl(.commit)
        } catch {
            return error
        }
        if let position { positionFile?.acknowledge(position) }
        return nil
    }

    #if DEBUG
        // MARK: - Fault injection (debug builds only: tests)

        /// Errors the next `COMMIT`s report instead of committing (then rolled back), oldest
        /// first. Guarded by `condition`.
        private var injectedCommitFailures: [StorageError] = []

        /// Makes the next `count` group commits fail with `error` without committing: the
        /// transaction is rolled back as after a real failed `COMMIT`. Tests only.
        func injectCommitFailures(_ error: StorageError, count: Int) {
            condition.lock()
            injectedCommitFailures.append(contentsOf: repeatElement(error, count: count))
            condition.unlock()
        }

        private func takeInjectedCommitFailure() -> StorageError? {
            condition.lock()
            defer { condition.unlock() }
            return injectedCommitFailures.isEmpty ? nil : injectedCommitFailures.removeFirst()
        }
    #endif
}
