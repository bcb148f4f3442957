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

    /// Wakes `userID`'s long polls after `tx` commits: in this process through `changeNotifier`,
    /// on every other instance through `NOTIFY suplash_changes, '<instanceID> <userID>'` (sent
    /// with the commit).
    func wake(_ tx: PostgresTransaction, userID: String) {
        tx.notify(channel: PostgresClusterChannel.changes, payload: instanceID + " " + userID)
        let notifier = changeNotifier
        tx.afterCommit { notifier.notify(userID: userID) }
    }
}
