import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore

/// `PostgresStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run in `write`'s
/// transactions (READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks) and on `read`'s pooled connections.
extension PostgresStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresStoreTransaction) throws -> T) throws -> T {
        try write { tx in try body(PostgresStoreTransaction(tx, store: self)) }
    }

    public func transactionReportingPositions<T: Sendable>(
        _ body: @escaping @Sendable (PostgresStoreTransaction) throws -> T
    ) throws -> (value: T, positions: CommittedPositions) {
        let (value, tx) = try write { tx -> (T, PostgresTransaction) in
            (try body(PostgresStoreTransaction(tx, store: self)), tx)
        }
        let first = tx.finalPosition(-1)
        return (value, CommittedPositions(stampBase: first < 0 ? nil : first - 1, highest: tx.positions.max()))
    }

    public func reading<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try read(body)
    }

    public func snapshot<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try snapshotRead(body)
    }

    public func snapshotPipeline(_ statements: [SQLStatement]) throws -> [[PostgresRow]] {
        try snapshotPipeline(statements.map { PostgresStatement($0.sql.postgres, $0.args) })
    }
}

/// A pooled connection (or a transaction's) runs the statements of a use case.
extension PostgresConnection: SQLExecutor {
    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// `update(sql, args)` (one round trip): the rows changed.
    public func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        try update(sql, args)
    }

    /// One libpq pipeline (one round trip, with whatever is queued in front).
    public func pipeline(_ statements: [SQLStatement]) throws -> [[PostgresRow]] {
        try pipeline(statements.map { PostgresStatement($0.sql.postgres, $0.args) })
    }
}

/// A PostgreSQL transaction of the store as the transaction of a use case: positions are taken
/// at the commit (`PostgresTransaction.changePosition(for:)`), long polls are woken on every
/// instance (`NOTIFY suplash_changes`) and in this process after the commit.
///
/// Valid only during the body. Do not keep it.
public final class PostgresStoreTransaction: StoreTransaction {
    /// The driver's transaction.
    public let transaction: PostgresTransaction
    private let store: PostgresStore
    /// The users whose long polls this transaction already wakes (once each, as on SQLite).
    private var woken: Set<String> = []

    init(_ transaction: PostgresTransaction, store: PostgresStore) {
        self.transaction = transaction
        self.store = store
    }

    /// The transaction's connection.
    public var connection: PostgresConnection { transaction.connection }

    /// `NOTIFY suplash_revocations` with the commit (`PostgresRevocationEvent`): delivered if
    /// and only if the transaction commits.
    public func announce(_ revocation: StoreRevocation) {
        let event: PostgresRevocationEvent =
            switch revocation {
            case .session(let id): .session(id: id)
            case .adminKeys: .adminKeys
            }
        transaction.notify(channel: PostgresClusterChannel.revocations, payload: event.payload)
    }

    /// Queued on the connection; sent with the next round trip.
    public func enqueue(_ sql: SQLText, _ args: [SQLValue]) throws {
        connection.enqueue(sql.postgres, args)
    }

    /// `PostgresStore.changePosition`: provisional until the commit stamps the row; the
    /// wake-up of `userID` is arranged once per transaction.
    public func changePosition(of row: ChangeRow, userID: String) throws -> Int64 {
        guard woken.insert(userID).inserted else { return try transaction.changePosition(for: row.postgres) }
        return try store.changePosition(transaction, userID: userID, row: row.postgres)
    }

    /// `PostgresStore.positionedWrite`: the statement runs inside the commit's statement; the
    /// wake-up of `userID` is arranged once per transaction.
    public func positionedWrite(of row: ChangeRow, userID: String, _ sql: SQLText, _ args: [SQLValue]) throws {
        let sql = Self.replacingParameter(args.count + 1, in: sql.postgres, with: PostgresTransaction.positionToken)
        guard woken.insert(userID).inserted else { return try transaction.positionedWrite(of: row.postgres, sql, args) }
        try store.positionedWrite(transaction, userID: userID, row: row.postgres, sql, args)
    }

    /// `PostgresTransaction.defersWrites`.
    public var defersPositionedWrites: Bool {
        get { transaction.defersWrites }
        set { transaction.defersWrites = newValue }
    }

    /// `PostgresTransaction.afterCommit`.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        transaction.afterCommit(body)
    }

    /// `sql` with every reference to parameter `$n` replaced by `replacement` (our statements
    /// have no `$` in literals or identifiers). One pass over the UTF-8 bytes: it runs for every
    /// positioned write, so it must cost little next to the write (a `Character` walk of the
    /// achievements upsert cost about ten times more).
    static func replacingParameter(_ n: Int, in sql: String, with replacement: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(sql.utf8.count + replacement.utf8.count)
        var dollar = -1  // where a `$` and its digits start in `out`, or -1
        var value = 0
        func replace() {
            if out.count - dollar > 1, value == n {
                out.removeSubrange(dollar...)
                out.append(contentsOf: replacement.utf8)
            }
            dollar = -1
        }
        for byte in sql.utf8 {
            if dollar >= 0 {
                if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    // A number too large for an `Int` is no parameter of ours: −1.
                    let (times, o1) = value.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                    value = value < 0 || o1 || o2 ? -1 : next
                    out.append(byte)
                    continue
                }
                replace()
            }
            if byte == UInt8(ascii: "$") {
                dollar = out.count
                value = 0
            }
            out.append(byte)
        }
        if dollar >= 0 { replace() }
        return String(decoding: out, as: UTF8.self)
    }
}

extension ChangeRow {
    /// The driver's form of this row.
    var postgres: PostgresChangeRow { PostgresChangeRow(table: table, keyColumns: keyColumns, key: key) }
}

extension PostgresStore: AdminKeyRepository {}
extension PostgresStore: SessionRepository {}
extension PostgresStore: WaterEntryRepository {}
extension PostgresStore: HydrationRepository {}
