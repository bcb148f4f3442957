import SuplashDomain
import SuplashSQL

/// Admin figures (spec §8, `GET /v1/admin/stats`), read in one snapshot. The active-user
/// figures read `water_entries` by `updated_at` without an index of their own: admin
/// dashboards ask rarely, and an index would cost every entry write. The backup
/// (`OperationsRepository.backup(to:)`) and the database size are each engine's own
/// (`DatabaseSizing`).
extension OperationsRepository where Self: SQLStore & DatabaseSizing {
    public func adminStats(dayStart: Int64, thirtyDaysAgo: Int64) throws -> AdminStats {
        let bytes = try databaseBytes()
        let counts = try snapshotPipeline([
            SQLStatement(OperationsSQL.users),
            SQLStatement(OperationsSQL.activeUsers, [.integer(dayStart)]),
            SQLStatement(OperationsSQL.activeUsers, [.integer(thirtyDaysAgo)]),
            SQLStatement(OperationsSQL.entriesCreated, [.integer(dayStart)]),
        ]).map { Int($0.first?[0].int64 ?? 0) }
        return AdminStats(
            users: counts[0], activeUsersToday: counts[1], activeUsers30d: counts[2], entriesToday: counts[3],
            databaseBytes: bytes)
    }
}

/// The size of a store's database, which each engine measures its own way: on SQLite the
/// database file's pages plus its WAL, on PostgreSQL `pg_database_size` of the current
/// database.
public protocol DatabaseSizing {
    /// The database's size in bytes.
    /// - Throws: `RepositoryError` (storage failures mapped by the store).
    func databaseBytes() throws -> Int64
}

enum OperationsSQL {
    static let users = SQLText("SELECT count(*) FROM users")
    static let activeUsers = SQLText("SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= ?1")
    static let entriesCreated = SQLText("SELECT count(*) FROM water_entries WHERE created_at >= ?1 AND deleted = 0")
}
