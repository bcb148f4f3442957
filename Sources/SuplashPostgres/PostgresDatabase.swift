import Foundation
import SuplashSQL

/// Transaction isolation levels (https://www.postgresql.org/docs/15/transaction-iso.html).
public enum PostgresIsolation: String, Sendable {
    /// Each statement sees what was committed before it started; row locks (`FOR UPDATE`,
    /// `UPDATE`) re-read the newest committed row version. The default for writes.
    case readCommitted = "READ COMMITTED"
    /// One snapshot for the whole transaction (multi-statement reads such as a sync page).
    case repeatableRead = "REPEATABLE READ"
    /// Serializable snapshot isolation; may fail with 40001 (retried by `transaction`).
    case serializable = "SERIALIZABLE"
}

/// Work a layer above the driver adds to a transaction's commit round trip (the store's change
/// sequence, `PostgresChangeSequence` of `SuplashPostgresStore`): one statement sent just
/// before `COMMIT`, in the same pipeline, carrying the queued notifications too.
public protocol PostgresCommitParticipant: AnyObject {
    /// True when the participant has nothing to send (then `pipelineAndCommit` may commit).
    var isIdle: Bool { get }
    /// The statement to send just before `COMMIT` (nil when idle), which must also call
    /// `pg_notify(channel, payload)` for each of `notifications`.
    func commitStatement(notifications: [(channel: String, payload: String)]) -> PostgresStatement?
    /// Called right before the commit's pipeline is sent with the participant's statement
    /// (the statements are prepared).
    func willSendCommit()
    /// Called once `COMMIT` succeeded: with the rows of the participant's statement, sent in
    /// the same round trip, or nil when it sent none.
    /// - Throws: `PostgresError` when the rows are not what the participant sent for.
    func didCommit(_ rows: [PostgresRow]?) throws
}

/// What a transaction body sees: the connection (a transaction is open), notifications sent
/// with the commit, and post-commit hooks.
///
/// Valid only during the body. Do not keep it.
public final class PostgresTransaction {
    /// The connection; `BEGIN` is queued or sent. Do not send `COMMIT`/`ROLLBACK` yourself.
    public let connection: PostgresConnection
    private(set) var callbacks: [@Sendable () -> Void] = []
    private var notifications: [(channel: String, payload: String)] = []
    private var notified: Set<String> = []
    /// What a layer above adds to the commit's round trip (at most one; set it once).
    public var commitParticipant: (any PostgresCommitParticipant)?
    /// True once `pipelineAndCommit` sent `COMMIT`.
    private var committed = false

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Registers `body` to run after the transaction committed (not after a rollback or a
    /// retried attempt). Keep it quick: long-poll wake-ups.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        callbacks.append(body)
    }

    /// Queues `NOTIFY channel, payload` (`pg_notify($1, $2)`, sent with the commit):
    /// PostgreSQL delivers it to every session listening on `channel` only if and when this
    /// transaction commits (docs: SQL command `NOTIFY`). The same pair is sent once per
    /// attempt. The payload must be shorter than 8000 bytes and must not carry user content:
    /// listeners and the server log may see it.
    public func notify(channel: String, payload: String) {
        guard notified.insert(channel + "\u{0}" + payload).inserted else { return }
        notifications.append((channel, payload))
    }

    /// Tries to take the transaction-level advisory lock `key` (`pg_try_advisory_xact_lock`,
    /// docs §9.27.10 "Advisory Lock Functions") without waiting: true when this transaction
    /// now holds it (until it ends), false when another session holds it. For jobs that only
    /// one instance should run at a time.
    /// - Throws: `PostgresError`.
    public func tryAdvisoryLock(_ key: Int64) throws -> Bool {
        let rows = try connection.query("SELECT pg_try_advisory_xact_lock($1::bigint) AS locked", [.integer(key)])
        return rows.first?["locked"] == .integer(1)
    }

    /// Runs `statements` and then `COMMIT` in one round trip (one pipeline, behind `BEGIN` and
    /// whatever else is still queued) and returns the rows of each statement, in order: the
    /// last statements of a transaction that has nothing else for its commit (no
    /// notification, an idle participant) — a snapshot read. At REPEATABLE READ the snapshot
    /// is taken by the transaction's first statement, so every statement of the pipeline
    /// reads the same one.
    ///
    /// The body must send nothing after this call (the transaction is over; `transaction`
    /// then sends no `COMMIT` of its own). In a transaction that does have work for its
    /// commit, this is `PostgresConnection.pipeline` and the usual commit follows.
    /// - Throws: `PostgresError` of the first failing statement (the transaction is then
    ///   rolled back as for any failure of the body).
    public func pipelineAndCommit(_ statements: [PostgresStatement]) throws -> [[PostgresRow]] {
        guard commitParticipant?.isIdle ?? true, notifications.isEmpty, !committed else {
            return try connection.pipeline(statements)
        }
        var results = try connection.pipeline(statements + [PostgresStatement(control: "COMMIT")])
        results.removeLast()
        committed = true
        return results
    }

    /// Sends the participant's statement (or the notifications alone), then `COMMIT` — one
    /// round trip (with whatever the connection still has queued in front). Nothing when
    /// `pipelineAndCommit` already committed.
    func commit() throws {
        guard !committed else { return }
        var statements: [PostgresStatement] = []
        let participantStatement = commitParticipant?.commitStatement(notifications: notifications)
        if let participantStatement {
            statements.append(participantStatement)
        } else if !notifications.isEmpty {
            statements.append(notifyStatement())
        }
        statements.append(PostgresStatement(control: "COMMIT"))
        try connection.prepare(statements)
        if participantStatement != nil { commitParticipant?.willSendCommit() }
        let results = try connection.pipeline(statements)
        try commitParticipant?.didCommit(participantStatement == nil ? nil : results[0])
    }

    /// `SELECT pg_notify($1, $2), …` for the queued notifications (shapes of up to six are
    /// prepared once per connection).
    private func notifyStatement() -> PostgresStatement {
        var args: [SQLValue] = []
        var calls: [String] = []
        for n in notifications {
            args += [.text(n.channel), .text(n.payload)]
            calls.append("pg_notify($\(args.count - 1), $\(args.count))")
        }
        let sql = "SELECT " + calls.joined(separator: ", ")
        return notifications.count <= 6 ? PostgresStatement(sql, args) : PostgresStatement(unnamed: sql, args)
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
    public func transaction<T>(
        isolation: PostgresIsolation = .readCommitted, readOnly: Bool = false,
        retryOnUniqueViolation: Bool = false, attempts: Int = 5,
        _ body: (PostgresTransaction) throws -> T
    ) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let (value, callbacks) = try pool.withConnection { connection -> (T, [@Sendable () -> Void]) in
                    // BEGIN travels with the first statement (one round trip fewer).
                    connection.enqueueControl("BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")")
                    do {
                        let tx = PostgresTransaction(connection: connection)
                        let value = try body(tx)
                        try tx.commit()
                        return (value, tx.callbacks)
                    } catch {
                        connection.discardQueued()
                        if connection.isHealthy, connection.isInTransaction { try? connection.execute("ROLLBACK") }
                        throw error
                    }
                }
                for callback in callbacks { callback() }
                return value
            } catch let error as PostgresError
                where attempt < attempts
                && (error.isTransient || (retryOnUniqueViolation && error.kind == .uniqueViolation))
            {
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
