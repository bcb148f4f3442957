import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// The change feed (spec §5, "Change feed"): a page of a user's changes after a position,
/// read in one snapshot with the head position, the purge horizon, the database id and the
/// profile. On PostgreSQL `BEGIN`, every read and `COMMIT` travel in one round trip
/// (`snapshotPipeline`): with commit order = position order, a snapshot holds exactly the
/// positions up to its head, so a client that resumes after the last position it got misses
/// nothing. On SQLite the reads share one read transaction.
extension SyncRepository where Self: SQLStore {
    /// `@inlinable`, and plain loops over indices rather than `zip`, key paths or
    /// `Optional.map`: the conformance's witness runs this generic body unspecialised, where
    /// each of those costs a runtime metadata or key-path lookup per call (the hottest read).
    @inlinable public func changes(userID: String, after: Int64, limit: Int, tombstonesAfter: Int64) throws -> SyncPage {
        let args: [SQLValue] = [
            .text(userID), .integer(after), .integer(Int64(limit + 1)), .integer(max(0, tombstonesAfter)),
        ]
        let sources = SyncFeedSource.allCases
        var statements: [SQLStatement] = []
        statements.reserveCapacity(sources.count + 4)
        for source in sources { statements.append(SQLStatement(source.sql, args)) }
        statements.append(SQLStatement(SyncFeedSQL.head))
        statements.append(SQLStatement(SyncFeedSQL.horizon))
        statements.append(SQLStatement(SyncFeedSQL.databaseID))
        statements.append(SQLStatement(BookkeepingSQL.profile, [.text(userID)]))
        let results = try snapshotPipeline(statements)
        var all: [SyncChange] = []
        for index in sources.indices {
            for row in results[index] { all.append(sources[index].change(row)) }
        }
        all.sort { $0.position < $1.position }
        let n = sources.count
        let head = results[n].isEmpty ? 0 : results[n][0][0].int64 ?? 0
        let horizon = results[n + 1].isEmpty ? 0 : results[n + 1][0][0].int64 ?? 0
        let databaseID = results[n + 2].isEmpty ? "" : results[n + 2][0][0].text ?? ""
        let profile = results[n + 3].isEmpty ? nil : StoreRows.user(results[n + 3][0]).profile
        return SyncPage(
            changes: all.count > limit ? Array(all.prefix(limit)) : all, hasMore: all.count > limit,
            databaseID: databaseID, purgeHorizon: horizon, headPosition: head, profile: profile)
    }

    public func databaseID() throws -> String {
        try reading { c in try c.queryOne(SyncFeedSQL.databaseID, [])?[0].text ?? "" }
    }
}

/// One collection of the change feed and its query: a user's rows after a position, served by
/// the collection's `(user_id, change_position)` index and ordered by it. Parameters: `?1` user
/// id, `?2` position (exclusive), `?3` limit, `?4` the position above which tombstones are
/// listed (`SyncRepository.changes`). A collection joins the feed by adding a case.
public enum SyncFeedSource: CaseIterable, Sendable {
    /// `profile` (the `users` row; at most one).
    case profile
    /// `water_entries`, tombstones included (`water_entries_changes`).
    case waterEntries
    /// `bills`, tombstones included (`bills_changes`).
    case bills
    /// `days` (`days_changes`).
    case days
    /// `achievements` (one row per user; its primary key).
    case achievements

    /// The collection's name in the feed and the push (spec §5).
    public var collection: String {
        switch self {
        case .profile: "profile"
        case .waterEntries: "water_entries"
        case .bills: "bills"
        case .days: "days"
        case .achievements: "achievements"
        }
    }

    /// The query of this source (parameters above).
    public var sql: SQLText {
        switch self {
        case .profile: SyncFeedSQL.profileSource
        case .waterEntries: SyncFeedSQL.waterEntries
        case .bills: SyncFeedSQL.bills
        case .days: SyncFeedSQL.days
        case .achievements: SyncFeedSQL.achievements
        }
    }

    /// A row of `sql` as a change.
    @inlinable func change(_ row: some SQLRowValues) -> SyncChange {
        switch self {
        case .profile: StoreRows.profileChange(row)
        case .waterEntries: StoreRows.entryChange(row)
        case .bills: StoreRows.billChange(row)
        case .days: StoreRows.dayChange(row)
        case .achievements: StoreRows.achievementsChange(row)
        }
    }
}

/// The feed's statements. `CAST(?4 AS BIGINT)` in a source that lists no tombstones only gives
/// PostgreSQL the parameter's type (`typed4`).
@usableFromInline enum SyncFeedSQL {
    /// `?4` where only PostgreSQL needs its type spelled out (SQLite takes the bare parameter).
    static func typed4(_ d: SQLDialect) -> String { d == .postgres ? "CAST(?4 AS BIGINT)" : "?4" }

    @usableFromInline static let profileSource = SQLText { d in
        """
        SELECT \(StoreRows.userColumns), change_position FROM users
        WHERE id = ?1 AND change_position > ?2 AND ?3 > 0 AND \(typed4(d)) >= 0
        """
    }
    @usableFromInline static let waterEntries = SQLText(
        """
        SELECT \(StoreRows.entryColumns), change_position FROM water_entries
        WHERE user_id = ?1 AND change_position > ?2 AND (deleted = 0 OR change_position > ?4)
        ORDER BY change_position
        LIMIT ?3
        """)
    @usableFromInline static let bills = SQLText(
        """
        SELECT \(StoreRows.billColumns), change_position FROM bills
        WHERE user_id = ?1 AND change_position > ?2 AND (deleted = 0 OR change_position > ?4)
        ORDER BY change_position
        LIMIT ?3
        """)
    @usableFromInline static let days = SQLText { d in
        """
        SELECT \(StoreRows.dayColumns), change_position FROM days
        WHERE user_id = ?1 AND change_position > ?2 AND \(typed4(d)) >= 0
        ORDER BY change_position
        LIMIT ?3
        """
    }
    @usableFromInline static let achievements = SQLText { d in
        """
        SELECT \(StoreRows.achievementsColumns), change_position FROM achievements
        WHERE user_id = ?1 AND change_position > ?2 AND \(typed4(d)) >= 0
        ORDER BY change_position
        LIMIT ?3
        """
    }
    @usableFromInline static let head = SQLText("SELECT position FROM change_sequence WHERE singleton = 1")
    @usableFromInline static let horizon = SQLText("SELECT purge_horizon FROM sync_state WHERE singleton = 1")
    @usableFromInline static let databaseID = SQLText("SELECT database_id FROM database_identity WHERE singleton = 1")
}
