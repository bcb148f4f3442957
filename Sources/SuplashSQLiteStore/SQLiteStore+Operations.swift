import SuplashDomain
import SuplashStorage

extension SQLiteStore: OperationsRepository {
    /// Admin-only counts. The active-user figures read `water_entries` by `updated_at`
    /// without an index of their own: admin dashboards ask rarely, and an index would
    /// cost every entry write.
    public func adminStats(dayStart: Int64, thirtyDaysAgo: Int64) throws -> AdminStats {
        let bytes: Int64
        do { bytes = try database.databaseBytes } catch let error as StorageError { throw map(error) }
        return try read { c in
            let users = try c.scalarInt64("SELECT count(*) FROM users") ?? 0
            let today =
                try c.scalarInt64(
                    "SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= ?",
                    [.integer(dayStart)]) ?? 0
            let month =
                try c.scalarInt64(
                    "SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= ?",
                    [.integer(thirtyDaysAgo)]) ?? 0
            let entries =
                try c.scalarInt64(
                    "SELECT count(*) FROM water_entries WHERE created_at >= ? AND deleted = 0",
                    [.integer(dayStart)]) ?? 0
            return AdminStats(
                users: Int(users), activeUsersToday: Int(today), activeUsers30d: Int(month),
                entriesToday: Int(entries), databaseBytes: bytes)
        }
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
