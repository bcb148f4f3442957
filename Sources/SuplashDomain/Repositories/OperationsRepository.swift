/// Figures for `GET /v1/admin/stats` (spec §8).
public struct AdminStats: Sendable, Equatable {
    /// Accounts.
    public var users: Int
    /// Users who wrote an entry since the start of the current UTC day.
    public var activeUsersToday: Int
    /// Users who wrote an entry in the last 30 days.
    public var activeUsers30d: Int
    /// Live entries created since the start of the current UTC day.
    public var entriesToday: Int
    /// Size of the database (pages + WAL), bytes.
    public var databaseBytes: Int64

    public init(users: Int, activeUsersToday: Int, activeUsers30d: Int, entriesToday: Int, databaseBytes: Int64) {
        self.users = users
        self.activeUsersToday = activeUsersToday
        self.activeUsers30d = activeUsers30d
        self.entriesToday = entriesToday
        self.databaseBytes = databaseBytes
    }
}

/// Operations on the store as a whole (spec §8 admin).
public protocol OperationsRepository: Sendable {
    /// Counts for the admin dashboard; times in ms since the epoch.
    func adminStats(dayStart: Int64, thirtyDaysAgo: Int64) throws -> AdminStats
    /// Writes a consistent online snapshot to `path` (which must not exist) while the
    /// server keeps serving; returns its size in bytes.
    func backup(to path: String) throws -> Int64
}
