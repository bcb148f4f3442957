import CSQLite
import Foundation

/// A SQLite database file with one writer thread (group commit) and a pool of WAL readers.
///
/// - Writes go to one connection owned by one dedicated thread. The thread takes every job
///   waiting in its queue (at most `maxBatchSize`), opens one `BEGIN IMMEDIATE` transaction,
///   runs each job inside its own `SAVEPOINT` (a throwing job is rolled back alone), commits
///   once and only then completes every job. With WAL and `synchronous=FULL` that `COMMIT`
///   is the fsync, so one fsync carries every job of the batch; at low load a job runs at
///   once (there is no batching delay).
/// - Reads use `readers` read-only connections (`query_only=ON`). WAL readers see the last
///   committed state and never wait for the writer.
/// - Other processes may open the same file (e.g. the CLI while a server runs): every lock
///   wait is bounded by `busyTimeoutMs`, after which the operation fails with `.busy`.
///
/// Thread-safe; every stored property is itself `Sendable`.
public final class SQLiteDatabase: Sendable {
    /// The database file path.
    public let path: String
    let writer: Writer
    private let readers: ReaderPool

    /// Opens (creating if needed) the database at `path`, starts the writer thread and opens
    /// the reader pool.
    ///
    /// The database file is owner-only (mode 0600): created so when missing, narrowed to it
    /// when group or others could read it; SQLite gives its `-wal` and `-shm` files the
    /// main file's mode (narrowed here too when left by an earlier run).
    ///
    /// - Parameters:
    ///   - path: database file path; `-wal` and `-shm` files live beside it.
    ///   - readers: number of read-only connections (≥ 1); `read` blocks only while all are busy.
    ///   - busyTimeoutMs: lock wait bound for every connection, in milliseconds.
    ///   - maxBatchSize: most jobs sharing one group transaction (≥ 1).
    ///   - writerCacheKiB: the writer's page-cache bound in KiB (nil = `Role.writer.defaultCacheKiB`).
    ///   - readerCacheKiB: each reader's page-cache bound in KiB (nil = `Role.reader.defaultCacheKiB`).
    /// - Throws: `StorageError` if a connection cannot be opened or configured (`.misuse`
    ///   for `readers < 1`).
    public init(
        path: String, readers: Int = 4, busyTimeoutMs: Int = 5000, maxBatchSize: Int = 256,
        writerCacheKiB: Int? = nil, readerCacheKiB: Int? = nil
    ) throws {
        guard readers >= 1 else { throw StorageError.misuse("at least one reader connection is required") }
        try Self.makeOwnerOnly(path)
        let writerConnection = try SQLiteConnection(
            path: path, role: .writer, busyTimeoutMs: busyTimeoutMs,
            cacheKiB: writerCacheKiB)
        var readerConnections: [SQLiteConnection] = []
        do {
            for _ in 0..<readers {
                readerConnections.append(
                    try SQLiteConnection(
                        path: path, role: .reader, busyTimeoutMs: busyTimeoutMs,
                        cacheKiB: readerCacheKiB))
            }
        } catch {
            for connection in readerConnections { connection.close() }
            writerConnection.close()
            throw error
        }
        self.path = path
        self.writer = Writer(connection: writerConnection, maxBatchSize: maxBatchSize)
        self.readers = ReaderPool(readerConnections)
        writer.start()
    }

    deinit { close() }

    // MARK: - Reads

    /// Runs `body` with a pooled read-only connection on the calling thread, then returns the
    /// connection to the pool (rolling back any transaction `body` left open).
    ///
    /// Blocks only while every reader is checked out. `body` sees a consistent snapshot per
    /// statement; wrap several statements in `BEGIN`…`COMMIT` for one snapshot across them.
    /// Do not let the connection escape `body`, and do not call `close()` from inside it.
    /// - Throws: what `body` throws; `StorageError` `.closed` if the database is closed.
    @discardableResult
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try readers.checkOut()
        defer { readers.checkIn(connection) }
        return try body(connection)
    }

    // MARK: - Writes

    /// Runs `body` on the writer thread inside a `SAVEPOINT` of a group transaction and
    /// returns its value once that transaction's `COMMIT` has returned (durable: fsync'd).
    ///
    /// Blocks the calling thread (use it from worker threads, never from an event loop).
    /// - Throws: what `body` throws (its work is rolled back, its batch-mates still commit),
    ///   or the `StorageError` of `BEGIN`/`COMMIT` (e.g. `.busy` when another process holds
    ///   the write lock past the busy timeout, `.full` when the disk is full; then no job of
    ///   the batch committed), or `.closed` if the database is closed, `.misuse` when called on the
    ///   writer thread (deadlock). When the batch does not commit, a body that threw after a
    ///   batch-mate's (now rolled back) write is run again alone, so what it throws never
    ///   rests on rows that were not committed; `body` must therefore have no effects outside
    ///   the database (register those with `afterCommit`).
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteContext) throws -> T) throws -> T {
        try blocking { completion in self.writeAsync(body, completion: completion) }
    }

    /// Like `write`, but returns at once; `completion` receives the result after the commit.
    ///
    /// `completion` runs on the writer thread (keep it short: hand off, do not block), or
    /// synchronously on the calling thread if the database is already closed.
    public func writeAsync<T: Sendable>(
        _ body: @escaping @Sendable (WriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        writer.submit(Self.job(exclusive: false, body, completion))
    }

    /// Runs `body` alone on the writer thread, **outside** any group transaction, after the
    /// jobs queued before it and before those queued after it. `body` manages its own
    /// transactions (for example `BEGIN IMMEDIATE` … `COMMIT`); a transaction it leaves open
    /// is rolled back and the call fails with `.misuse`. Used by migrations and `checkpoint`.
    /// `afterCommit` callbacks run after `body` returns without throwing.
    /// - Throws: what `body` throws; `.closed` if closed, `.misuse` if called on the writer thread.
    @discardableResult
    public func writeExclusive<T: Sendable>(_ body: @escaping @Sendable (WriteContext) throws -> T) throws -> T {
        try blocking { completion in self.writer.submit(Self.job(exclusive: true, body, completion)) }
    }

    #if DEBUG
        /// Makes the next `count` group (or re-run) commits fail with `error` instead of
        /// committing; each transaction is rolled back as after a real failed `COMMIT`.
        /// Debug builds only: the storage tests' fault injection (a full disk at `COMMIT`).
        func injectCommitFailures(_ error: StorageError, count: Int = 1) {
            writer.injectCommitFailures(error, count: count)
        }
    #endif

    /// Cumulative writer statistics (commits, jobs, …); `jobs > commits` shows group commit.
    public var writerStatistics: WriterStatistics { writer.snapshot }

    /// Jobs waiting in the writer queue right now (not counting the batch being run).
    public var pendingWriteCount: Int { writer.pendingCount }

    /// Number of reader connections in the pool.
    public var readerCount: Int { readers.size }

    // MARK: - Maintenance

    /// The outcome of a checkpoint (`PRAGMA wal_checkpoint(TRUNCATE)` result row).
    public struct CheckpointResult: Sendable, Equatable {
        /// `true` if a reader or another process prevented a complete checkpoint.
        public var busy: Bool
        /// Frames in the WAL before the checkpoint (-1 if unknown).
        public var walFrames: Int64
        /// Frames copied back into the database file (-1 if unknown).
        public var checkpointedFrames: Int64
    }

    /// Copies the WAL into the database file and truncates the WAL to zero bytes
    /// (`PRAGMA wal_checkpoint(TRUNCATE)`), on the writer thread between batches.
    /// - Returns: the checkpoint result; `busy == true` means readers kept it partial.
    /// - Throws: `StorageError`.
    @discardableResult
    public func checkpoint() throws -> CheckpointResult {
        try writeExclusive { context in
            let row = try context.connection.queryOne("PRAGMA wal_checkpoint(TRUNCATE)")
            return CheckpointResult(
                busy: (try row?.optionalInt64(0) ?? 0) != 0,
                walFrames: try row?.optionalInt64(1) ?? -1,
                checkpointedFrames: try row?.optionalInt64(2) ?? -1)
        }
    }

    /// Rewrites the database file (`VACUUM`, on the writer thread, alone), then truncates the
    /// WAL (`PRAGMA wal_checkpoint(TRUNCATE)`): no free page of the file and no WAL frame keeps
    /// bytes of deleted or overwritten rows (with `secure_delete`, used after sealing plaintext).
    /// `VACUUM` first copies the whole database into a temporary database; the connection keeps
    /// its temporary tables in memory (`temp_store=MEMORY`), which would put that copy on the heap
    /// (1.2 GiB resident, and kept by malloc afterwards, for a database of 1,000,000 users), so
    /// the vacuum runs with `temp_store=FILE`: the copy goes to a temporary file in SQLite's
    /// temporary directory (`SQLITE_TMPDIR`, else `/var/tmp`, `/usr/tmp`, `/tmp`), which needs
    /// free space about the database's size for the moment.
    /// - Throws: `StorageError`.
    public func vacuum() throws {
        try writeExclusive { context in
            try context.connection.execute("PRAGMA temp_store=FILE")
            defer { try? context.connection.execute("PRAGMA temp_store=MEMORY") }
            try context.connection.execute("VACUUM")
        }
        try checkpoint()
    }

    /// Size on disk in bytes: `page_count × page_size` of the database plus the WAL file size.
    /// - Throws: `StorageError` (`.closed` once closed).
    public var databaseBytes: Int64 {
        get throws {
            let main = try read { connection in
                let pages = try connection.scalarInt64("PRAGMA page_count") ?? 0
                let pageSize = try connection.scalarInt64("PRAGMA page_size") ?? 0
                return pages * pageSize
            }
            return main + (fileSize(path + "-wal") ?? 0)
        }
    }

    /// Online backup (https://sqlite.org/backup.html) of a consistent snapshot into a new
    /// file at `destination`, from a reader connection: writes continue meanwhile.
    ///
    /// The copy is written to `destination + ".partial"` (created with mode 0600: it holds
    /// emails and password hashes), switched to `journal_mode=DELETE` (one self-contained
    /// file), handed to `prepareCopy` (if given) on its own connection, fsync'd, then renamed
    /// to `destination`.
    /// - Returns: the size of the backup file in bytes.
    /// - Throws: `StorageError` — `.misuse` if `destination` already exists, otherwise
    ///   the error of the failing SQLite call (`.ioError`, `.full`, `.busy`, …) or what
    ///   `prepareCopy` throws.
    public func backup(to destination: String, prepareCopy: ((SQLiteConnection) throws -> Void)? = nil) throws -> Int64 {
        if fileSize(destination) != nil {
            throw StorageError.misuse("backup destination already exists")
        }
        let partial = destination + ".partial"
        unlink(partial)
        // Owner-only from the start: the copy holds emails and password hashes. SQLite keeps
        // the mode of a file that exists.
        let created = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 else { throw Self.errnoError(errno, "create the backup file") }
        Glibc.close(created)
        do {
            try read { source in
                let target = try SQLiteConnection(path: partial, rawReadWrite: ())
                defer { target.close() }
                guard let backup = sqlite3_backup_init(target.handle, "main", source.handle, "main") else {
                    throw target.lastError(sqlite3_errcode(target.handle))
                }
                var rc: Int32
                repeat {
                    rc = sqlite3_backup_step(backup, -1)
                    if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { sqlite3_sleep(10) }
                } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
                let finish = sqlite3_backup_finish(backup)
                guard rc == SQLITE_DONE else { throw target.lastError(rc) }
                guard finish == SQLITE_OK else { throw target.lastError(finish) }
            }
            // The copied header still says WAL; make the copy a single rollback-journal file.
            let copy = try SQLiteConnection(path: partial, rawReadWrite: ())
            defer { copy.close() }
            _ = try copy.scalar("PRAGMA journal_mode=DELETE")
            try prepareCopy?(copy)
            copy.close()
            _ = chmod(partial, 0o600)
            try fsyncFile(partial)
            guard rename(partial, destination) == 0 else {
                throw StorageError(code: SQLITE_IOERR, kind: .ioError, message: "rename failed, errno \(errno)")
            }
            try fsyncFile(directoryOf(destination))
        } catch {
            unlink(partial)
            unlink(partial + "-wal")
            unlink(partial + "-shm")
            throw error
        }
        return fileSize(destination) ?? 0
    }

    /// Drains the writer queue (queued jobs still run), stops the writer thread, waits for
    /// every checked-out reader to come back, and closes every connection. Idempotent.
    /// Later `read`/`write` calls fail with `.misuse`. Must not be called from inside `read`.
    public func close() {
        writer.close()
        readers.close()
    }

    // MARK: - Helpers

    private static func job<T: Sendable>(
        exclusive: Bool,
        _ body: @escaping @Sendable (WriteContext) throws -> T,
        _ completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> WriterJob {
        WriterJob(
            exclusive: exclusive,
            run: { context in
                do {
                    let value = try body(context)
                    return WriterOutcome(succeeded: true) { commitError in
                        if let commitError {
                            completion(.failure(commitError))
                        } else {
                            completion(.success(value))
                        }
                    }
                } catch {
                    return WriterOutcome(succeeded: false) { _ in completion(.failure(error)) }
                }
            }, fail: { error in completion(.failure(error)) })
    }

    /// Creates `path` empty with mode 0600 when missing (SQLite treats an empty file as a new
    /// database), and narrows `path`, `-wal` and `-shm` to 0600 when they grant group or
    /// others any access. Files the process does not own are left alone.
    /// - Throws: `StorageError` when `path` cannot be created.
    static func makeOwnerOnly(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            Glibc.close(fd)
        } else if errno != EEXIST {
            throw errnoError(errno, "create the database file")
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard stat(file, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 != 0 else { continue }
            _ = chmod(file, info.st_mode & 0o700)
        }
    }

    /// Submits through `submit` and blocks until the completion arrives.
    private func blocking<T: Sendable>(
        _ submit: (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void
    ) throws -> T {
        if writer.isWriterThread {
            throw StorageError.misuse("a blocking write on the writer thread would deadlock; use writeAsync")
        }
        let box = ResultBox<T>()
        submit { box.fulfil($0) }
        return try box.wait().get()
    }
}

/// A one-shot result slot a caller blocks on.
///
/// `@unchecked Sendable`: `result` is guarded by `condition`.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<T, any Error>?

    func fulfil(_ value: Result<T, any Error>) {
        condition.lock()
        result = value
        condition.signal()
        condition.unlock()
    }

    func wait() -> Result<T, any Error> {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result { return result }
            condition.wait()
        }
    }
}

extension SQLiteConnection {
    /// A plain read-write connection without role pragmas (backup targets).
    convenience init(path: String, rawReadWrite: ()) throws {
        try self.init(path: path, role: .writer, busyTimeoutMs: 5000, applyPragmas: false)
    }
}

/// Size of the file at `path` in bytes, or `nil` if it does not exist.
func fileSize(_ path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
}

private func directoryOf(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    let directory = String(path[..<slash])
    return directory.isEmpty ? "/" : directory
}

private func fsyncFile(_ path: String) throws {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else {
        throw StorageError(code: SQLITE_IOERR, kind: .ioError, message: "open for fsync failed, errno \(errno)")
    }
    defer { close(fd) }
    guard fsync(fd) == 0 else {
        throw StorageError(code: SQLITE_IOERR, kind: .ioError, message: "fsync failed, errno \(errno)")
    }
}
