import Foundation
import SuplashSQL

/// Transaction isolation levels (https://www.postgresql.org/docs/15/transaction-iso.html).
public enum PostgresIsolation: String, Sendable {
    /// Each statement sees what was committed before it started; row locks (`FOR UPDATE`,
    /// `UPDATE`) re-read the newest committed row version. The default for writes: the
    /// change-sequence row lock, taken at the commit, orders them (see `PostgresTransaction.changePosition(for:)`).
    case readCommitted = "READ COMMITTED"
    /// One snapshot for the whole transaction (multi-statement reads such as a sync page).
    case repeatableRead = "REPEATABLE READ"
    /// Serializable snapshot isolation; may fail with 40001 (retried by `transaction`).
    case serializable = "SERIALIZABLE"
}

/// A row that takes a change position: `table` and the key columns that find it (SQL
/// identifiers — constants of the caller, never input) with their values.
public struct PostgresChangeRow: Sendable, Equatable {
    /// The table (an identifier constant).
    public let table: String
    /// Its key columns (identifier constants).
    public let keyColumns: [String]
    /// The key values, bound as parameters.
    public let key: [SQLValue]

    /// The row of `table` where `keyColumns` equal `key`.
    public init(table: String, keyColumns: [String], key: [SQLValue]) {
        self.table = table
        self.keyColumns = keyColumns
        self.key = key
    }
}

/// What a transaction body sees: the connection (a transaction is open) and post-commit hooks.
///
/// Valid only during the body. Do not keep it.
public final class PostgresTransaction {
    /// The connection; `BEGIN` is queued or sent. Do not send `COMMIT`/`ROLLBACK` yourself.
    public let connection: PostgresConnection
    private(set) var callbacks: [@Sendable () -> Void] = []
    /// The change positions this attempt took, in order (for tests and logging).
    public private(set) var positions: [Int64] = []
    /// True once this transaction holds the change-sequence row lock.
    public private(set) var holdsChangeSequence = false
    /// The connection's round trips when the change-sequence lock was taken (`nil` before):
    /// `roundTripsHoldingChangeSequence` counts from here.
    private var roundTripsAtLock: Int?
    /// Round trips made while holding the change-sequence lock, the commit included (set when
    /// the transaction committed; for tests and statistics).
    public private(set) var roundTripsHoldingChangeSequence = 0
    /// Rows waiting for their change position (`changePosition(for:)`, `positionedWrite`),
    /// with the offset of their position among the `pendingCount` positions the commit will
    /// take and, for a deferred write, its statement.
    private var pending: [(row: PostgresChangeRow, offset: Int64, write: PostgresStatement?)] = []
    private var pendingCount: Int64 = 0
    private var notifications: [(channel: String, payload: String)] = []
    private var notified: Set<String> = []

    /// The base the commit's stamp statement returned: the k-th deferred position is
    /// `stampBase + k` (`finalPosition`).
    private var stampBase: Int64?
    /// Whether `positionedWrite` may move its statement into the commit's statement (true,
    /// the default). Set it to false in a transaction that may read a positioned row again
    /// after writing it (the sync push re-reads achievements per mutation): the write is
    /// then queued at once and the row stamped at the commit.
    public var defersWrites = true
    /// True once `pipelineAndCommit` sent `COMMIT`.
    private var committed = false

    /// True for a provisional position (`changePosition(for:)` without the lock): negative,
    /// −k for the k-th position the commit will take. What a row holds until the commit
    /// stamps it — never committed, since the stamp runs in the same transaction.
    public static func isProvisional(_ position: Int64) -> Bool { position < 0 }

    /// The position `position` became: itself, or for a provisional one the number the commit
    /// took for it. Valid after the commit (the transaction object may be returned from the
    /// body for this and for `positions`).
    public func finalPosition(_ position: Int64) -> Int64 {
        guard Self.isProvisional(position), let base = stampBase else { return position }
        return base - position
    }

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Registers `body` to run after the transaction committed (not after a rollback or a
    /// retried attempt). Keep it quick: long-poll wake-ups.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        callbacks.append(body)
    }

    /// The change position for `row`, which this transaction writes (inserts or updates).
    ///
    /// **Deferred (the usual case).** When this transaction does not hold the change-sequence
    /// lock, this returns a provisional position (negative; `isProvisional`,
    /// `finalPosition`) for the caller to write, and the commit takes
    /// the positions of every such row at its very end: one statement locks and bumps the
    /// sequence and stamps each row (`commit`), and `COMMIT` follows in the same round trip.
    /// The lock — the one thing every positioned writer on every instance shares — is then
    /// held for no client round trip at all, only for that statement and the commit's WAL
    /// flush (docs/postgresql.md, "Change sequence").
    ///
    /// **Immediate.** When the lock is already held (`lockChangeSequence`,
    /// `takeChangePosition`), the position is taken now and returned, as before.
    ///
    /// Positions follow the order of the calls; a row registered twice gets the later one
    /// (the earlier position is consumed, as an immediate second stamp would).
    /// - Throws: `PostgresError`.
    public func changePosition(for row: PostgresChangeRow) throws -> Int64 {
        if holdsChangeSequence { return try takeChangePosition() }
        materialiseWrite(of: row)
        pendingCount += 1
        pending.append((row, pendingCount, nil))
        return -pendingCount
    }

    /// The text that stands for the row's change position in a `positionedWrite` statement.
    public static let positionToken = "$position"

    /// Writes `row` with its change position, as late as possible: `sql` is one
    /// `INSERT`/`UPDATE` of that row (no `RETURNING`) with `args` bound to `$1`, `$2`, …
    /// and `positionToken` where the position goes.
    ///
    /// Without the change-sequence lock the statement does not run now: it becomes part of
    /// the commit's one statement, which takes the sequence lock, bumps it and then writes
    /// the row with its position (a data-modifying `WITH` part referring to the new
    /// position) — one row version instead of a provisional write and a stamp, and no
    /// client round trip under the lock. Use it only when nothing later in the transaction
    /// reads the row (reads would not see it yet); failures (unique violations) surface at
    /// the commit. With the lock held it is queued now with its position
    /// (`PostgresConnection.enqueue`).
    /// - Throws: `PostgresError`.
    public func positionedWrite(of row: PostgresChangeRow, _ sql: String, _ args: [SQLValue]) throws {
        if holdsChangeSequence {
            let position = try takeChangePosition()
            connection.enqueue(
                sql.replacingOccurrences(of: Self.positionToken, with: "$\(args.count + 1)::bigint"),
                args + [.integer(position)])
            return
        }
        materialiseWrite(of: row)
        if !defersWrites || pending.contains(where: { $0.row == row }) {
            // The row is stamped anyway: one statement cannot change it twice.
            let position = try changePosition(for: row)
            connection.enqueue(
                sql.replacingOccurrences(of: Self.positionToken, with: "$\(args.count + 1)::bigint"),
                args + [.integer(position)])
            return
        }
        pendingCount += 1
        pending.append((row, pendingCount, PostgresStatement(sql, args)))
    }

    /// A second registration of `row` while its deferred write is pending: that write is
    /// queued now with a provisional position and the row is stamped at the commit instead.
    private func materialiseWrite(of row: PostgresChangeRow) {
        guard let index = pending.firstIndex(where: { $0.row == row }) else { return }
        let entry = pending.remove(at: index)
        if let write = entry.write {
            connection.enqueue(
                write.sql.replacingOccurrences(of: Self.positionToken, with: "$\(write.args.count + 1)::bigint"),
                write.args + [.integer(-entry.offset)])
        }
    }

    /// Takes the next position of the change sequence now (`change_sequence`, one row), and
    /// with it the sequence's row lock until this transaction ends. Rows registered with
    /// `changePosition(for:)` before are stamped first (they come earlier).
    ///
    /// **Commit order = position order, without gaps, across any number of server
    /// instances.** Positions come from `UPDATE change_sequence SET position = position
    /// + n … RETURNING position`, which takes the row lock of the single counter row and
    /// keeps it until this transaction ends:
    /// 1. While transaction A holds the lock, every other writer B blocks in the same
    ///    `UPDATE`. PostgreSQL releases row locks only after A's commit (or abort) is
    ///    recorded and visible to new snapshots.
    /// 2. If A committed, B's `UPDATE` (READ COMMITTED) re-reads the newest row version, so
    ///    B gets A's last position + 1 and commits after A: positions are handed out in
    ///    commit order. Any snapshot that sees B's rows therefore also sees A's, so a feed
    ///    reader that has seen position p has seen every position below p.
    /// 3. If A aborted, its increment is rolled back with it and B gets the same number:
    ///    no gaps (a `SEQUENCE` would leave one).
    /// 4. Every row carrying a position is stamped by the transaction that took it, before
    ///    its `COMMIT`: no committed row ever holds a provisional (negative) position.
    /// Prefer `changePosition(for:)`: it holds the lock for the shortest time.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func takeChangePosition() throws -> Int64 {
        if !pending.isEmpty {
            let (statement, _) = stampStatement(withNotifications: false)
            try stamp(connection.pipeline([statement])[0])
        }
        markLocked()
        let rows = try connection.query(
            "UPDATE change_sequence SET position = position + 1 WHERE singleton = 1 RETURNING position")
        guard case .integer(let position) = rows.first?[0] ?? .null else {
            throw PostgresError(kind: .decoding, message: "change_sequence has no row")
        }
        positions.append(position)
        return position
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

    /// Takes the change-sequence row lock without taking a position (`SELECT … FOR UPDATE`),
    /// so that everything this transaction reads afterwards (READ COMMITTED: each statement
    /// sees what committed before it) cannot be changed by another position-taking writer
    /// until this transaction ends; later `changePosition(for:)` calls take their positions
    /// immediately. The store no longer needs it (the user's row lock protects its
    /// read-decide-write paths and positions are taken at the commit); it holds the
    /// sequence for the rest of the transaction, so prefer not to.
    /// - Throws: `PostgresError`.
    public func lockChangeSequence() throws {
        if !pending.isEmpty {
            try takeChangePosition()
            return
        }
        markLocked()
        try connection.query("SELECT position FROM change_sequence WHERE singleton = 1 FOR UPDATE")
    }

    private func markLocked() {
        guard !holdsChangeSequence else { return }
        holdsChangeSequence = true
        roundTripsAtLock = connection.roundTrips
    }

    /// Runs `statements` and then `COMMIT` in one round trip (one pipeline, behind `BEGIN` and
    /// whatever else is still queued) and returns the rows of each statement, in order: the
    /// last statements of a transaction that took no change position and sent no
    /// notification — a snapshot read. At REPEATABLE READ the snapshot is taken by the
    /// transaction's first statement, so every statement of the pipeline reads the same one.
    ///
    /// The body must send nothing after this call (the transaction is over; `transaction`
    /// then sends no `COMMIT` of its own). In a transaction that did take positions or queue
    /// notifications, this is `PostgresConnection.pipeline` and the usual commit follows.
    /// - Throws: `PostgresError` of the first failing statement (the transaction is then
    ///   rolled back as for any failure of the body).
    public func pipelineAndCommit(_ statements: [PostgresStatement]) throws -> [[PostgresRow]] {
        guard pending.isEmpty, notifications.isEmpty, !committed else { return try connection.pipeline(statements) }
        var results = try connection.pipeline(statements + [PostgresStatement(control: "COMMIT")])
        results.removeLast()
        committed = true
        return results
    }

    /// Stamps the pending rows and sends the notifications, then `COMMIT` — one round trip
    /// (with whatever the connection still has queued in front). Nothing when
    /// `pipelineAndCommit` already committed.
    func commit() throws {
        guard !committed else { return }
        var statements: [PostgresStatement] = []
        var stamping = false
        if !pending.isEmpty || !notifications.isEmpty {
            let (statement, stamps) = stampStatement(withNotifications: true)
            statements.append(statement)
            stamping = stamps
        }
        statements.append(PostgresStatement(control: "COMMIT"))
        try connection.prepare(statements)
        if stamping {
            // The statement takes the lock; with COMMIT in the same pipeline the lock is held
            // for this one round trip.
            markLocked()
        }
        let results = try connection.pipeline(statements)
        if stamping { try stamp(results[0]) }
        if let start = roundTripsAtLock { roundTripsHoldingChangeSequence = connection.roundTrips - start }
    }

    /// One statement that takes the pending rows' positions (locking and bumping the
    /// sequence once, by `pendingCount`) and stamps each row, plus the queued notifications.
    /// Returns it and whether it stamps. Identifiers come from `PostgresChangeRow`
    /// (constants); every value is a parameter.
    private func stampStatement(withNotifications: Bool) -> (PostgresStatement, Bool) {
        var args: [SQLValue] = []
        func parameter(_ value: SQLValue) -> String {
            args.append(value)
            return "$\(args.count)"
        }
        var sql = ""
        var from = ""
        var select: [String] = []
        if !pending.isEmpty {
            let count = parameter(.integer(pendingCount))
            sql =
                "WITH seq AS (UPDATE change_sequence SET position = position + \(count)::bigint WHERE singleton = 1 "
                + "RETURNING position - \(count)::bigint AS base)"
            for (index, entry) in pending.enumerated() {
                let position = "((SELECT base FROM seq) + \(parameter(.integer(entry.offset)))::bigint)"
                if let write = entry.write {
                    let offset = args.count
                    args += write.args
                    let body = Self.renumber(write.sql, by: offset)
                        .replacingOccurrences(of: Self.positionToken, with: position)
                    sql += ", w\(index) AS (\(body))"
                } else {
                    let condition = zip(entry.row.keyColumns, entry.row.key)
                        .map { "\($0.0) = \(parameter($0.1))" }.joined(separator: " AND ")
                    sql += ", s\(index) AS (UPDATE \(entry.row.table) SET change_position = \(position) WHERE \(condition))"
                }
            }
            select.append("base")
            from = " FROM seq"
        }
        if withNotifications {
            for n in notifications {
                select.append("pg_notify(\(parameter(.text(n.channel))), \(parameter(.text(n.payload))))")
            }
        }
        sql += " SELECT " + select.joined(separator: ", ") + from
        // The usual shapes (a row or two and a notification) are prepared once per
        // connection; large ones (a batch) are sent unnamed rather than cached.
        let statement = pending.count + notifications.count <= 6 ? PostgresStatement(sql, args) : PostgresStatement(unnamed: sql, args)
        return (statement, !pending.isEmpty)
    }

    /// `sql` with every parameter reference `$n` turned into `$(n + offset)` (our statements
    /// have no `$` in literals or identifiers; `positionToken` has no digit after the `$`).
    static func renumber(_ sql: String, by offset: Int) -> String {
        guard offset > 0 else { return sql }
        var out = ""
        var index = sql.startIndex
        while index < sql.endIndex {
            let c = sql[index]
            index = sql.index(after: index)
            out.append(c)
            guard c == "$" else { continue }
            var end = index
            while end < sql.endIndex, sql[end].isASCII, sql[end].isNumber { end = sql.index(after: end) }
            if end > index, let n = Int(sql[index..<end]) {
                out += String(n + offset)
                index = end
            }
        }
        return out
    }

    /// Records the positions the stamp statement took (its `base` column) and clears the
    /// pending rows.
    private func stamp(_ rows: [PostgresRow]) throws {
        guard case .integer(let base) = rows.first?[0] ?? .null else {
            throw PostgresError(kind: .decoding, message: "change_sequence has no row")
        }
        positions += (1...pendingCount).map { base + $0 }
        stampBase = base
        pending.removeAll()
        pendingCount = 0
    }
}

/// Counters of committed write transactions (for tests and operations; not timing).
///
/// `@unchecked Sendable`: every field is guarded by `lock`.
public final class PostgresWriteStatistics: @unchecked Sendable {
    private let lock = NSLock()
    private var commits = 0
    private var positioned = 0
    private var holding = 0
    private var maxHolding = 0

    /// A snapshot of the counters.
    public struct Snapshot: Sendable, Equatable {
        /// Committed transactions.
        public var commits: Int
        /// Committed transactions that took change positions (or the sequence lock).
        public var positionedCommits: Int
        /// Round trips made while holding the change-sequence lock, summed over those.
        public var roundTripsHoldingChangeSequence: Int
        /// The most round trips one transaction made while holding it.
        public var maxRoundTripsHoldingChangeSequence: Int
    }

    /// The counters now.
    public var snapshot: Snapshot {
        lock.withLock {
            Snapshot(
                commits: commits, positionedCommits: positioned, roundTripsHoldingChangeSequence: holding,
                maxRoundTripsHoldingChangeSequence: maxHolding)
        }
    }

    /// Sets every counter to zero.
    public func reset() {
        lock.withLock {
            commits = 0
            positioned = 0
            holding = 0
            maxHolding = 0
        }
    }

    func record(_ tx: PostgresTransaction) {
        lock.withLock {
            commits += 1
            guard tx.holdsChangeSequence else { return }
            positioned += 1
            holding += tx.roundTripsHoldingChangeSequence
            maxHolding = max(maxHolding, tx.roundTripsHoldingChangeSequence)
        }
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
    /// Counters of committed write transactions (change-sequence lock round trips).
    public let statistics = PostgresWriteStatistics()

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
                        statistics.record(tx)
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
