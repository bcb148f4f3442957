import Foundation
import SuplashStorage

/// Transaction isolation levels (https://www.postgresql.org/docs/15/transaction-iso.html).
public enum PostgresIsolation: String, Sendable {
    /// Each statement sees what was committed before it started; row locks (`FOR UPDATE`,
    /// `UPDATE`) re-read the newest committed row version. The default for writes: the
    /// change-sequence row lock orders them (see `PostgresTransaction.takeChangePosition`).
    case readCommitted = "READ COMMITTED"
    /// One snapshot for the whole transaction (multi-statement reads such as a sync page).
    case repeatableRead = "REPEATABLE READ"
    /// Serializable snapshot isolation; may fail with 40001 (retried by `transaction`).
    case serializable = "SERIALIZABLE"
}

/// What a transaction body sees: the connection (a transaction is open) and post-commit hooks.
///
/// Valid only during the body. Do not keep it.
public final class PostgresTransaction {
    /// The connection; `BEGIN` has been sent. Do not send `COMMIT`/`ROLLBACK` yourself.
    public let connection: PostgresConnection
    private(set) var callbacks: [@Sendable () -> Void] = []
    /// The change positions this attempt took, in order (for tests and logging).
    public private(set) var positions: [Int64] = []

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Registers `body` to run after the transaction committed (not after a rollback or a
    /// retried attempt). Keep it quick: long-poll wake-ups.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        callbacks.append(body)
    }

    /// Takes the next position of the change sequence (`change_sequence`, one row).
    ///
    /// **Commit order = position order, without gaps, across any number of server
    /// instances.** The position comes from `UPDATE change_sequence SET position = position
    /// + 1 … RETURNING position`, which takes the row lock of the single counter row and
    /// keeps it until this transaction ends:
    /// 1. While transaction A holds the lock, every other writer B blocks in the same
    ///    `UPDATE`. PostgreSQL releases row locks only after A's commit (or abort) is
    ///    recorded and visible to new snapshots.
    /// 2. If A committed, B's `UPDATE` (READ COMMITTED) re-reads the newest row version, so
    ///    B gets A's position + 1 and commits after A: positions are handed out in commit
    ///    order. Any snapshot that sees B's rows therefore also sees A's, so a feed reader
    ///    that has seen position p has seen every position below p.
    /// 3. If A aborted, its increment is rolled back with it and B gets the same number:
    ///    no gaps (a `SEQUENCE` would leave one).
    /// A transaction may take several positions (an entry and its achievements row); the
    /// lock is already held for the later ones. Take the position as late as the write
    /// allows — after the reads and checks — to keep the serialised section short.
    /// - Throws: `PostgresError`.
    public func takeChangePosition() throws -> Int64 {
        let rows = try connection.query(
            "UPDATE change_sequence SET position = position + 1 WHERE singleton = 1 RETURNING position")
        guard case .integer(let position) = rows.first?[0] ?? .null else {
            throw PostgresError(kind: .decoding, message: "change_sequence has no row")
        }
        positions.append(position)
        return position
    }

    /// Queues `NOTIFY channel, payload` (`SELECT pg_notify($1, $2)`): PostgreSQL delivers it
    /// to every session listening on `channel` only if and when this transaction commits
    /// (docs: SQL command `NOTIFY`). The same pair is sent once per attempt (PostgreSQL would
    /// fold duplicates too; this saves the round trips). The payload must be shorter than
    /// 8000 bytes and must not carry user content: listeners and the server log may see it.
    /// - Throws: `PostgresError`.
    public func notify(channel: String, payload: String) throws {
        guard notified.insert(channel + "\u{0}" + payload).inserted else { return }
        try connection.query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }
    private var notified: Set<String> = []

    /// Tries to take the transaction-level advisory lock `key` (`pg_try_advisory_xact_lock`,
    /// docs §9.27.10 "Advisory Lock Functions") without waiting: true when this transaction
    /// now holds it (until it ends), false when another session holds it. For jobs that only
    /// one instance should run at a time.
    /// - Throws: `PostgresError`.
    public func tryAdvisoryLock(_ key: Int64) throws -> Bool {
        let rows = try connection.query("SELECT pg_try_advisory_xact_lock($1::bigint) AS locked", [.integer(key)])
        return rows.first?["locked"] == .integer(1)
    }

    /// Takes the change-sequence row lock without taking a position (`SELECT … FOR UPDATE`),
    /// so that everything this transaction reads afterwards (READ COMMITTED: each statement
    /// sees what committed before it) cannot be changed by another position-taking writer
    /// until this transaction ends. For read-decide-write paths such as the sync push.
    /// - Throws: `PostgresError`.
    public func lockChangeSequence() throws {
        try connection.query("SELECT position FROM change_sequence WHERE singleton = 1 FOR UPDATE")
    }
}

/// A PostgreSQL database behind a bounded connection pool.
///
/// `write`/`transaction` run a body inside `BEGIN ISOLATION LEVEL …` … `COMMIT`, retrying the
/// whole body on serialization failures and deadlocks (and, when asked, on unique
/// violations, so a body that checks before it inserts sees the row a concurrent writer
/// committed). `COMMIT` returns after the WAL flush (`synchronous_commit = on`, the
/// default), matching SQLite's fsync'd commit.
public final class PostgresDatabase: Sendable {
    /// The pool (exposed for operations and tests).
    public let pool: PostgresPool
    /// The libpq URL it connects with. May carry a password: never log it.
    public let url: String

    /// - Parameters:
    ///   - url: libpq connection string or URL (Unix socket or loopback).
    ///   - poolSize: at most this many connections are open at once (≥ 1).
    ///   - acquireTimeout: seconds a caller waits for a free connection before
    ///     `PostgresError.poolExhausted`.
    /// - Throws: `PostgresError` when the first connection cannot be made.
    public init(url: String, poolSize: Int = 8, acquireTimeout: Double = 10) throws {
        self.url = url
        pool = PostgresPool(url: url, maxSize: max(1, poolSize), acquireTimeout: acquireTimeout)
        try pool.withConnection { _ in }
    }

    /// Closes every idle connection; later calls reconnect.
    public func close() { pool.drain() }

    /// Runs `body` on a pooled connection in autocommit mode (each statement is its own
    /// snapshot). Use `transaction(isolation: .repeatableRead)` for a multi-statement snapshot.
    /// - Throws: `PostgresError` or what `body` throws.
    public func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try pool.withConnection(body)
    }

    /// Runs `body` in a transaction and commits it; runs the `afterCommit` hooks after the
    /// commit. A serialization failure or deadlock (and a unique violation when
    /// `retryOnUniqueViolation`) rolls back and re-runs `body`, at most `attempts` times in
    /// all; `body` must therefore have no effects outside the database.
    /// - Throws: `PostgresError`, or what `body` throws (then the transaction is rolled back).
    public func transaction<T>(isolation: PostgresIsolation = .readCommitted, readOnly: Bool = false,
                               retryOnUniqueViolation: Bool = false, attempts: Int = 5,
                               _ body: (PostgresTransaction) throws -> T) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let (value, callbacks) = try pool.withConnection { connection -> (T, [@Sendable () -> Void]) in
                    try connection.execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")")
                    do {
                        let tx = PostgresTransaction(connection: connection)
                        let value = try body(tx)
                        try connection.execute("COMMIT")
                        return (value, tx.callbacks)
                    } catch {
                        if connection.isHealthy, connection.isInTransaction { try? connection.execute("ROLLBACK") }
                        throw error
                    }
                }
                for callback in callbacks { callback() }
                return value
            } catch let error as PostgresError
                where attempt < attempts
                && (error.isTransient || (retryOnUniqueViolation && error.kind == .uniqueViolation)) {
                continue
            }
        }
    }
}

/// A bounded pool of `PostgresConnection`s, opened lazily.
///
/// `@unchecked Sendable`: `idle`, `open` and `draining` are guarded by `condition`.
public final class PostgresPool: @unchecked Sendable {
    private let url: String
    /// The most connections open at once.
    public let maxSize: Int
    private let acquireTimeout: Double
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0

    init(url: String, maxSize: Int, acquireTimeout: Double) {
        self.url = url
        self.maxSize = maxSize
        self.acquireTimeout = acquireTimeout
    }

    /// How many connections are open (idle or in use).
    public var openCount: Int { condition.withLock { open } }

    /// Checks a connection out, runs `body`, and returns it (or drops it if it broke or
    /// was left inside a transaction).
    /// - Throws: `PostgresError` `.poolExhausted` after `acquireTimeout`, `.connectionFailure`,
    ///   or what `body` throws.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try acquire()
        defer { release(connection) }
        return try body(connection)
    }

    private func acquire() throws -> PostgresConnection {
        let deadline = Date(timeIntervalSinceNow: acquireTimeout)
        condition.lock()
        while idle.isEmpty && open >= maxSize {
            if !condition.wait(until: deadline) {
                condition.unlock()
                throw PostgresError(kind: .poolExhausted, message: "no free connection")
            }
        }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try PostgresConnection(url: url)
        } catch {
            condition.withLock {
                open -= 1
                condition.signal()
            }
            throw error
        }
    }

    private func release(_ connection: PostgresConnection) {
        let reusable = connection.isHealthy && !connection.isInTransaction
        if !reusable { connection.close() }
        condition.withLock {
            if reusable { idle.append(connection) } else { open -= 1 }
            condition.signal()
        }
    }

    /// Closes the idle connections.
    func drain() {
        let closing = condition.withLock {
            let all = idle
            open -= all.count
            idle.removeAll()
            condition.broadcast()
            return all
        }
        for connection in closing { connection.close() }
    }
}
