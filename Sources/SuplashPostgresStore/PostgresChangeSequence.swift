import Foundation
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore

/// The change sequence of a PostgreSQL transaction (spec §5 "Change feed"; docs/postgresql.md,
/// "Change sequence"): positions in commit order, without gaps, across any number of server
/// instances — taken by the commit's own round trip, so the one lock every positioned writer
/// shares is held for no client round trip.
///
/// **Deferred (the usual case).** `changePosition(for:)` returns a provisional position
/// (negative: −k for the k-th position the commit takes; `CommittedPositions.isProvisional`)
/// for the caller to write, and `positionedWrite` keeps its statement for the commit. At the
/// commit one statement (`commitStatement`) locks and bumps `change_sequence` by the number of
/// pending rows, stamps each row (or runs its deferred write with the real position, a
/// data-modifying `WITH` part) and sends the notifications; `COMMIT` follows in the same
/// pipeline.
///
/// **Immediate.** Once the sequence is held (`takeChangePosition`, `lockChangeSequence`),
/// positions are taken at once.
///
/// **Why commit order = position order, without gaps.** `UPDATE change_sequence SET position
/// = position + n … RETURNING` takes the row lock of the single counter row until the
/// transaction ends: (1) while A holds it every other writer B blocks in the same `UPDATE`,
/// and PostgreSQL releases row locks only after A's commit (or abort) is recorded and visible;
/// (2) if A committed, B's `UPDATE` (READ COMMITTED) re-reads the newest row version, so B's
/// positions follow A's and B commits after A — a snapshot that sees B's rows sees A's;
/// (3) if A aborted, its increment is rolled back and B gets the same numbers: no gaps (a
/// `SEQUENCE` would leave one); (4) every row carrying a position is stamped by the
/// transaction that took it, before its `COMMIT`: no committed row holds a provisional one.
///
/// One per transaction attempt (`of(_:)` attaches it as the transaction's commit
/// participant). Valid only during the transaction, then for reading `positions`.
public final class PostgresChangeSequence: PostgresCommitParticipant {
    private let transaction: PostgresTransaction
    private var connection: PostgresConnection { transaction.connection }
    /// The final positions this transaction took, in order (after the commit for deferred ones).
    public private(set) var positions: [Int64] = []
    /// True once this transaction holds the change-sequence row lock.
    public private(set) var holdsChangeSequence = false
    /// The connection's round trips when the lock was taken (nil before).
    private var roundTripsAtLock: Int?
    /// Round trips made while holding the sequence lock, the commit included (set at the commit).
    public private(set) var roundTripsHoldingChangeSequence = 0
    /// Rows waiting for their position, with their offset among the `pendingCount` positions
    /// the commit will take and, for a deferred write, its statement (`$(n+1)` = the position).
    private var pending: [(row: ChangeRow, offset: Int64, write: PostgresStatement?)] = []
    private var pendingCount: Int64 = 0
    /// The base the commit's statement returned: the k-th deferred position is `stampBase + k`.
    public private(set) var stampBase: Int64?
    /// Whether `positionedWrite` may move its statement into the commit (see
    /// `StoreTransaction.defersPositionedWrites`).
    public var defersWrites = true

    private init(_ transaction: PostgresTransaction) {
        self.transaction = transaction
    }

    /// The sequence of `transaction`: its commit participant, attached on first use.
    public static func of(_ transaction: PostgresTransaction) -> PostgresChangeSequence {
        if let existing = transaction.commitParticipant as? PostgresChangeSequence { return existing }
        let sequence = PostgresChangeSequence(transaction)
        transaction.commitParticipant = sequence
        return sequence
    }

    /// The sequence already attached to `transaction`, if any.
    static func attached(to transaction: PostgresTransaction) -> PostgresChangeSequence? {
        transaction.commitParticipant as? PostgresChangeSequence
    }

    /// What the commit made of the positions (`SQLStore.transactionReportingPositions`).
    public var committedPositions: CommittedPositions {
        CommittedPositions(stampBase: stampBase, highest: positions.max())
    }

    /// The position for `row`, which this transaction writes: provisional (stamped at the
    /// commit) unless the sequence is held. A row registered twice gets the later position.
    /// - Throws: `PostgresError`.
    public func changePosition(for row: ChangeRow) throws -> Int64 {
        if holdsChangeSequence { return try takeChangePosition() }
        materialiseWrite(of: row)
        pendingCount += 1
        pending.append((row, pendingCount, nil))
        return -pendingCount
    }

    /// Writes `row` with its position: `sql` is one `INSERT`/`UPDATE` of that row (no
    /// `RETURNING`) in PostgreSQL text, `args` bound to `$1…$n` and `$(n+1)` standing for the
    /// position. Deferred into the commit's statement unless the sequence is held, the row is
    /// already pending, or `defersWrites` is false — then queued now with its position.
    /// - Throws: `PostgresError`.
    public func positionedWrite(of row: ChangeRow, _ sql: String, _ args: [SQLValue]) throws {
        if holdsChangeSequence || !defersWrites || pending.contains(where: { $0.row == row }) {
            let position = try changePosition(for: row)
            connection.enqueue(sql, args + [.integer(position)])
            return
        }
        pendingCount += 1
        pending.append((row, pendingCount, PostgresStatement(sql, args)))
    }

    /// A second registration of `row` while its deferred write is pending: that write is
    /// queued now with a provisional position and the row is stamped at the commit instead.
    private func materialiseWrite(of row: ChangeRow) {
        guard let index = pending.firstIndex(where: { $0.row == row }) else { return }
        let entry = pending.remove(at: index)
        if let write = entry.write { connection.enqueue(write.sql, write.args + [.integer(-entry.offset)]) }
    }

    /// Takes the next position now, and with it the sequence's row lock until the transaction
    /// ends; pending rows are stamped first (they come earlier). Prefer `changePosition(for:)`.
    /// - Throws: `PostgresError`.
    @discardableResult
    public func takeChangePosition() throws -> Int64 {
        if !pending.isEmpty, let statement = commitStatement(notifications: []) {
            try didStamp(connection.pipeline([statement])[0])
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

    /// Takes the sequence's row lock without a position (`SELECT … FOR UPDATE`): later
    /// positions are taken at once. Holds the sequence for the rest of the transaction.
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

    // MARK: - PostgresCommitParticipant

    /// True when no row waits for its position.
    public var isIdle: Bool { pending.isEmpty }

    /// One statement that locks and bumps the sequence once (by the pending count), stamps or
    /// writes each pending row, and calls `pg_notify` for `notifications`. Identifiers come from
    /// `ChangeRow` (constants); every value is a parameter.
    public func commitStatement(notifications: [(channel: String, payload: String)]) -> PostgresStatement? {
        guard !pending.isEmpty else { return nil }
        var args: [SQLValue] = []
        func parameter(_ value: SQLValue) -> String {
            args.append(value)
            return "$\(args.count)"
        }
        let count = parameter(.integer(pendingCount))
        var sql =
            "WITH seq AS (UPDATE change_sequence SET position = position + \(count)::bigint WHERE singleton = 1 "
            + "RETURNING position - \(count)::bigint AS base)"
        for (index, entry) in pending.enumerated() {
            let position = "((SELECT base FROM seq) + \(parameter(.integer(entry.offset)))::bigint)"
            if let write = entry.write {
                let offset = args.count
                args += write.args
                let body = Self.renumber(write.sql, by: offset, replacing: write.args.count + 1, with: position)
                sql += ", w\(index) AS (\(body))"
            } else {
                let condition = zip(entry.row.keyColumns, entry.row.key)
                    .map { "\($0.0) = \(parameter($0.1))" }.joined(separator: " AND ")
                sql += ", s\(index) AS (UPDATE \(entry.row.table) SET change_position = \(position) WHERE \(condition))"
            }
        }
        var select = ["base"]
        for n in notifications {
            select.append("pg_notify(\(parameter(.text(n.channel))), \(parameter(.text(n.payload))))")
        }
        sql += " SELECT " + select.joined(separator: ", ") + " FROM seq"
        // The usual shapes (a row or two and a notification) are prepared once per
        // connection; large ones (a batch) are sent unnamed rather than cached.
        return pending.count + notifications.count <= 6 ? PostgresStatement(sql, args) : PostgresStatement(unnamed: sql, args)
    }

    /// The commit's statement takes the lock; with `COMMIT` in the same pipeline it is held for
    /// that one round trip.
    public func willSendCommit() {
        markLocked()
    }

    /// Records the positions the commit's statement took (if it sent one) and the round trips
    /// the sequence was held.
    public func didCommit(_ rows: [PostgresRow]?) throws {
        if let rows { try didStamp(rows) }
        if let start = roundTripsAtLock { roundTripsHoldingChangeSequence = connection.roundTrips - start }
    }

    /// Records the positions from the statement's `base` column and clears the pending rows.
    private func didStamp(_ rows: [PostgresRow]) throws {
        guard case .integer(let base) = rows.first?[0] ?? .null else {
            throw PostgresError(kind: .decoding, message: "change_sequence has no row")
        }
        positions += (1...pendingCount).map { base + $0 }
        stampBase = base
        pending.removeAll()
        pendingCount = 0
    }

    /// `sql` with every parameter reference `$k` turned into `$(k + offset)`, and `$replaced`
    /// into `replacement` (our statements have no `$` in literals or identifiers).
    static func renumber(_ sql: String, by offset: Int, replacing replaced: Int, with replacement: String) -> String {
        var out = ""
        var index = sql.startIndex
        while index < sql.endIndex {
            let c = sql[index]
            index = sql.index(after: index)
            guard c == "$" else {
                out.append(c)
                continue
            }
            var end = index
            while end < sql.endIndex, sql[end].isASCII, sql[end].isNumber { end = sql.index(after: end) }
            if end > index, let n = Int(sql[index..<end]) {
                out += n == replaced ? replacement : "$\(n + offset)"
            } else {
                out.append(c)
            }
            index = end
        }
        return out
    }
}

/// Counters of committed write transactions (for tests and operations; not timing).
///
/// `@unchecked Sendable`: every field is guarded by `lock`.
public final class PostgresWriteStatistics: @unchecked Sendable {
    private let lock = NSLock()
    private var counters = Snapshot(
        commits: 0, positionedCommits: 0, roundTripsHoldingChangeSequence: 0, maxRoundTripsHoldingChangeSequence: 0)

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

    /// Creates zeroed counters.
    public init() {}

    /// The counters now.
    public var snapshot: Snapshot { lock.withLock { counters } }

    /// Sets every counter to zero.
    public func reset() {
        lock.withLock {
            counters = Snapshot(
                commits: 0, positionedCommits: 0, roundTripsHoldingChangeSequence: 0, maxRoundTripsHoldingChangeSequence: 0)
        }
    }

    /// Counts one committed transaction and what its change sequence (if it had one) held.
    public func record(_ sequence: PostgresChangeSequence?) {
        lock.withLock {
            counters.commits += 1
            guard let sequence, sequence.holdsChangeSequence else { return }
            counters.positionedCommits += 1
            counters.roundTripsHoldingChangeSequence += sequence.roundTripsHoldingChangeSequence
            counters.maxRoundTripsHoldingChangeSequence = max(
                counters.maxRoundTripsHoldingChangeSequence, sequence.roundTripsHoldingChangeSequence)
        }
    }
}
