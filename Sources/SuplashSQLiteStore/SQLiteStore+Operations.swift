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
            let today = try c.scalarInt64("SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= ?",
                                          [.integer(dayStart)]) ?? 0
            let month = try c.scalarInt64("SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= ?",
                                          [.integer(thirtyDaysAgo)]) ?? 0
            let entries = try c.scalarInt64("SELECT count(*) FROM water_entries WHERE created_at >= ? AND deleted = 0",
                                            [.integer(dayStart)]) ?? 0
            return AdminStats(users: Int(users), activeUsersToday: Int(today), activeUsers30d: Int(month),
                              entriesToday: Int(entries), databaseBytes: bytes)
        }
    }

    public func backup(to path: String) throws -> Int64 {
        do { return try database.backup(to: path) } catch { throw RepositoryError.unavailable }
    }
}
