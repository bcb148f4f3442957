import SuplashDomain
import SuplashStorage
import SuplashStoreCore

/// What SQLite does its own way for `OperationsRepository` (the admin figures are written once
/// in `SuplashStoreCore`): the database size and the online backup.
extension SQLiteStore: DatabaseSizing {
    /// The database file's pages plus its WAL (`SQLiteDatabase.databaseBytes`).
    /// - Throws: `RepositoryError` (the storage failure mapped).
    public func databaseBytes() throws -> Int64 {
        do { return try database.databaseBytes } catch let error as StorageError { throw map(error) }
    }

    /// The snapshot is a fork of this database's history: it gets a new database id, so
    /// once it is restored every sync token issued before is answered 410
    /// `sync_history_changed` and devices push back what the restore lost (spec §5) —
    /// without it, a device whose token lies below the snapshot's head would carry on and
    /// never re-send the writes made after the snapshot that it already saw acknowledged.
    public func backup(to path: String) throws -> Int64 {
        do { return try database.backup(to: path, prepareCopy: SQLiteStore.forkHistory) } catch { throw RepositoryError.unavailable }
    }

    /// Gives a backup copy a new database id (see `backup(to:)`); for callers of
    /// `SQLiteDatabase.backup(to:prepareCopy:)` that need its `StorageError`s (the CLI).
    /// - Throws: `StorageError`.
    public static func forkHistory(_ copy: SQLiteConnection) throws {
        try copy.execute("UPDATE database_identity SET database_id = lower(hex(randomblob(16))) WHERE singleton = 1")
    }
}

extension SQLiteStore {
    /// `SealedValueRepository.compactAfterSealing`: `VACUUM`, then a truncating WAL checkpoint
    /// (`SQLiteDatabase.vacuum`).
    /// - Throws: `RepositoryError` (the storage failure mapped).
    public func compactAfterSealing() throws {
        do { try database.vacuum() } catch let error as StorageError { throw map(error) }
    }
}
