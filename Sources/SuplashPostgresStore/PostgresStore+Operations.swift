import SuplashDomain
import SuplashPostgres
import SuplashStorage

extension PostgresStore: OperationsRepository {
    /// Admin-only counts, read in one snapshot; `databaseBytes` is `pg_database_size` of the
    /// current database.
    public func adminStats(dayStart: Int64, thirtyDaysAgo: Int64) throws -> AdminStats {
        try snapshotRead { c in
            let users = try c.scalarInt64("SELECT count(*) FROM users") ?? 0
            let today = try c.scalarInt64("SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= $1",
                                          [.integer(dayStart)]) ?? 0
            let month = try c.scalarInt64("SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= $1",
                                          [.integer(thirtyDaysAgo)]) ?? 0
            let entries = try c.scalarInt64("SELECT count(*) FROM water_entries WHERE created_at >= $1 AND deleted = 0",
                                            [.integer(dayStart)]) ?? 0
            let bytes = try c.scalarInt64("SELECT pg_database_size(current_database())") ?? 0
            return AdminStats(users: Int(users), activeUsersToday: Int(today), activeUsers30d: Int(month),
                              entriesToday: Int(entries), databaseBytes: bytes)
        }
    }

    /// Not offered on PostgreSQL: the server cannot write a consistent file of a networked
    /// database to its own disk. Back up with PostgreSQL's tools (`pg_dump`, or base backups
    /// with WAL archiving for point-in-time recovery).
    /// - Throws: `RepositoryError.unavailable`, always.
    public func backup(to path: String) throws -> Int64 {
        throw RepositoryError.unavailable
    }
}
