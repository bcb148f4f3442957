import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore
import SuplashStoreRows

/// The PostgreSQL adapter of the repository protocols of `SuplashDomain`, for any number of
/// server instances on one database (docs/postgresql.md).
///
/// Semantics follow `SQLiteStore`: every write that changes a synced document takes a
/// change position (`PostgresChangeSequence`, commit order = position
/// order, taken at the commit), stamps the last-write-wins columns, and notifies long polls
/// after the commit.
/// Writes run at READ COMMITTED; read-modify-write paths lock the row they read
/// (`FOR UPDATE`), and check-then-insert paths are re-run when a concurrent writer won the
/// unique index (the retry then sees the committed row and answers as SQLite would).
/// PostgreSQL types never leave this target: failures become `RepositoryError`.
public final class PostgresStore: Sendable {
    /// The underlying database.
    public let database: PostgresDatabase
    /// Classified storage failures and the write probe's result (`/readyz`, metrics, logs).
    public let health: StorageHealth
    /// Reports the users each commit of this process touched (the long-poll registry subscribes).
    public let changeNotifier = ChangeNotifier()
    /// A random id of this store object (one per server process): the first word of its
    /// `suplash_changes` payloads, so that its own `PostgresClusterListener` skips the
    /// changes `changeNotifier` already reported in-process. Not secret, not user data.
    public let instanceID = UUID().uuidString.lowercased()
    /// Counters of committed write transactions (change-sequence lock round trips).
    public let statistics = PostgresWriteStatistics()

    /// Creates the store on a migrated database.
    /// - Parameter health: where classified failures are counted (one per server; a fresh
    ///   one by default).
    public init(database: PostgresDatabase, health: StorageHealth = StorageHealth()) {
        self.database = database
        self.health = health
    }

    /// Runs a read, mapping storage failures to `RepositoryError`.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try database.read(body)
        } catch let error as PostgresError {
            throw map(error)
        }
    }

    /// Runs a multi-statement read in one snapshot (REPEATABLE READ, READ ONLY), so its
    /// parts agree with each other as SQLite's single read transaction does.
    func snapshotRead<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try database.transaction(isolation: .repeatableRead, readOnly: true) { try body($0.connection) }
        } catch let error as PostgresError {
            throw map(error)
        }
    }

    /// Runs `statements` in one snapshot (REPEATABLE READ, READ ONLY) and returns the rows of
    /// each, in order: `BEGIN`, the statements and `COMMIT` travel in one round trip
    /// (`PostgresTransaction.pipelineAndCommit`), and all of them read the snapshot the
    /// first statement took — the same answers as `snapshotRead` running them one by one.
    func snapshotPipeline(_ statements: [PostgresStatement]) throws -> [[PostgresRow]] {
        do {
            return try database.transaction(isolation: .repeatableRead, readOnly: true) {
                try $0.pipelineAndCommit(statements)
            }
        } catch let error as PostgresError {
            throw map(error)
        }
    }

    /// Runs a write transaction (READ COMMITTED, re-run on unique violations, serialization
    /// failures and deadlocks), mapping storage failures to `RepositoryError`.
    func write<T>(_ body: (PostgresTransaction) throws -> T) throws -> T {
        do {
            let (value, sequence) = try database.transaction(isolation: .readCommitted, retryOnUniqueViolation: true) {
                tx -> (T, PostgresChangeSequence?) in
                (try body(tx), PostgresChangeSequence.attached(to: tx))
            }
            statistics.record(sequence)
            return value
        } catch let error as PostgresError {
            throw map(error)
        }
    }

    /// The repository error for a PostgreSQL error; a classified failure is also recorded
    /// in `health` (counted, logged, and for corruption or a read-only database, `/readyz`).
    func map(_ error: PostgresError) -> RepositoryError {
        if let failure = Self.failure(error.kind) {
            health.record(failure)
            return .storage(failure)
        }
        switch error.kind {
        case .uniqueViolation: return .conflict(code: "conflict")
        default: return .unavailable
        }
    }

    /// The operator's kind of a PostgreSQL error (from its SQLSTATE, see `PostgresError.Kind`),
    /// or nil for errors that are not storage failures (constraints, syntax, decoding — bugs
    /// or conflicts, answered as before). Serialization failures and deadlocks reach here
    /// only after the transaction's retries: counted as `busy`.
    public static func failure(_ kind: PostgresError.Kind) -> StorageFailure? {
        switch kind {
        case .diskFull: .full
        case .dataCorrupted: .corrupt
        case .readOnlyTransaction: .readOnly
        case .timeout, .poolExhausted, .serializationFailure, .deadlockDetected, .insufficientResources: .busy
        case .systemError: .io
        case .serverShutdown: .shutdown
        case .connectionFailure: .connection
        case .uniqueViolation, .foreignKeyViolation, .constraintViolation, .syntax, .invalidParameter, .decoding,
            .other:
            nil
        }
    }

    /// The change position for `row` of `userID` (written by this transaction), and the
    /// long-poll wake-up of `userID` after the commit: in this process through
    /// `changeNotifier`, on every other instance through `NOTIFY suplash_changes,
    /// '<instanceID> <userID>'` (sent with the commit, once per transaction and user).
    /// Unless the transaction already holds the change sequence, the position is
    /// provisional and the commit stamps the row (`PostgresChangeSequence`).
    func changePosition(_ tx: PostgresTransaction, userID: String, row: ChangeRow) throws -> Int64 {
        let position = try PostgresChangeSequence.of(tx).changePosition(for: row)
        wake(tx, userID: userID)
        return position
    }

    /// `PostgresChangeSequence.positionedWrite` of `row` of `userID` (`$(n+1)` in `sql` stands
    /// for the position), and the long-poll wake-up as for `changePosition`.
    func positionedWrite(_ tx: PostgresTransaction, userID: String, row: ChangeRow, _ sql: String, _ args: [SQLValue]) throws {
        // Statements not yet written once still say `$position`.
        let text = sql.replacingOccurrences(of: "$position", with: "$\(args.count + 1)")
        try PostgresChangeSequence.of(tx).positionedWrite(of: row, text, args)
        wake(tx, userID: userID)
    }

    /// Wakes `userID`'s long polls after `tx` commits, on every instance.
    private func wake(_ tx: PostgresTransaction, userID: String) {
        tx.notify(channel: PostgresClusterChannel.changes, payload: instanceID + " " + userID)
        let notifier = changeNotifier
        tx.afterCommit { notifier.notify(userID: userID) }
    }

    /// Locks the user's row (`FOR NO KEY UPDATE`) and returns the profile, nil when there is
    /// no such user. Every write of a user's synced documents takes this first: writers of
    /// the same user run one after the other (their read-modify-write of daily totals and
    /// achievements needs that), writers of different users do not wait for each other,
    /// and the change-sequence lock comes last (lock order: user row, document rows,
    /// change sequence). Inserts referencing the user (`FOR KEY SHARE`) are not blocked.
    static func lockUserStatement(_ userID: String) -> PostgresStatement {
        PostgresStatement("SELECT \(StoreRows.userColumns) FROM users WHERE id = $1 FOR NO KEY UPDATE", [.text(userID)])
    }

    /// `lockUserStatement` sent alone.
    static func lockUser(_ c: PostgresConnection, userID: String) throws -> UserProfile? {
        try c.pipeline([lockUserStatement(userID)])[0].first.map { StoreRows.user($0).profile }
    }

    /// Broadcasts `event` to every instance's revocation view with this transaction's commit
    /// (`NOTIFY suplash_revocations`): delivered if and only if the revocation committed.
    func publish(_ tx: PostgresTransaction, _ event: PostgresRevocationEvent) throws {
        tx.notify(channel: PostgresClusterChannel.revocations, payload: event.payload)
    }
}

/// The rows that carry change positions (`ChangeRow`).
typealias ChangeRows = ChangeRow
