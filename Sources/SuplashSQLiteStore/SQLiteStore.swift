import SuplashDomain
import SuplashStorage
import SuplashStoreRows

/// The SQLite adapter of every repository protocol of `SuplashDomain`.
///
/// Reads go to the reader pool; writes go to the single writer (group commit) and
/// return only after their commit is fsync'd (spec §7 durability). SQLite types never
/// leave this target: failures become `RepositoryError`.
public final class SQLiteStore: Sendable {
    /// The underlying database (exposed for operations: readiness, checkpoint, backup).
    public let database: SQLiteDatabase
    /// Reports the users each commit touched (wired to the long-poll registry).
    public let changeNotifier = ChangeNotifier()
    /// Classified storage failures and the write probe's result (`/readyz`, metrics, logs).
    public let health: StorageHealth

    /// - Parameter health: where classified failures are counted (one per server; a fresh
    ///   one by default).
    public init(database: SQLiteDatabase, health: StorageHealth = StorageHealth()) {
        self.database = database
        self.health = health
    }

    /// Runs a read on a pooled connection, mapping storage failures to `.unavailable`.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        do {
            return try database.read(body)
        } catch let error as StorageError {
            throw map(error)
        }
    }

    /// Runs a write job in the group commit, mapping storage failures.
    func write<T: Sendable>(_ body: @escaping @Sendable (WriteContext) throws -> T) throws -> T {
        do {
            return try database.write(body)
        } catch let error as StorageError {
            throw map(error)
        }
    }

    /// The repository error for a storage error; a classified failure is also recorded in
    /// `health` (counted, logged, and for corruption or a read-only database, `/readyz`).
    func map(_ error: StorageError) -> RepositoryError {
        if let failure = Self.failure(error.kind) {
            health.record(failure)
            return .storage(failure)
        }
        switch error.kind {
        case .constraintUnique, .constraintPrimaryKey: return .conflict(code: "conflict")
        default: return .unavailable
        }
    }

    /// The operator's kind of a storage error (from SQLite's extended result code, see
    /// `StorageError.Kind`), or nil for errors that are not storage failures (constraints,
    /// type mismatches, misuse — those are bugs or conflicts, answered as before).
    public static func failure(_ kind: StorageError.Kind) -> StorageFailure? {
        switch kind {
        case .full: .full
        case .corrupt: .corrupt
        case .readOnly: .readOnly
        case .busy: .busy
        case .ioError: .io
        case .closed: .shutdown
        case .constraintUnique, .constraintPrimaryKey, .constraintForeignKey, .constraintCheck, .constraintNotNull,
            .constraint, .typeMismatch, .misuse, .other:
            nil
        }
    }

    /// The database's current change position (the WAL position file records it after each
    /// group commit; `SQLiteDatabase.trackAcknowledgedPosition`).
    public static let changePositionSQL = "SELECT position FROM change_sequence WHERE singleton = 1"

    /// The database's id (`database_identity`), which sync tokens carry and a backup forks.
    public static let databaseIdentitySQL = "SELECT database_id FROM database_identity WHERE singleton = 1"

    /// Gives the database a new id (32 hex digits), as a backup copy gets: every sync token
    /// issued before is then `sync_history_changed` (spec §5).
    public static let forkDatabaseIdentitySQL =
        "UPDATE database_identity SET database_id = lower(hex(randomblob(16))) WHERE singleton = 1"

    /// Takes the next position of the change sequence inside the current transaction
    /// (position order = commit order, no gaps across committed transactions).
    ///
    /// An `UPDATE` then a `SELECT` (same transaction, same connection): `UPDATE … RETURNING`
    /// made SQLite build an ephemeral table for the returned row on every call, ~32k
    /// instructions of a create's ~575k (callgrind), twice per create.
    static func nextChangePosition(_ connection: SQLiteConnection) throws -> Int64 {
        guard try connection.run("UPDATE change_sequence SET position = position + 1 WHERE singleton = 1") == 1,
            let position = try connection.scalarInt64("SELECT position FROM change_sequence WHERE singleton = 1")
        else {
            throw RepositoryError.unavailable
        }
        return position
    }
}
