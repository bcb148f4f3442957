import SuplashSQL

/// Applies `Migrations/postgres/NNNN_name.sql` with the same rules as the SQLite
/// `Migrator` (both use `MigrationPlan` of `SuplashSQL` to load and plan): each migration runs in its own
/// transaction together with its `schema_migrations(version, name, checksum, applied_at)`
/// row; a changed, renamed or missing applied file, or a pending file older than the newest
/// applied one, refuses to start (nothing is applied).
///
/// Several instances may start at once: the migrator holds a session-level advisory lock
/// (`pg_advisory_lock`) for the whole run, so each migration is applied exactly once and the
/// others see it as applied.
public enum PostgresMigrator {
    /// The advisory lock key of the migrator ("SUPLASHM" as ASCII, as a bigint).
    static let lockKey: Int64 = 0x5355_504C_4153_484D

    /// Applies every pending migration in version order.
    /// - Returns: how many were applied (0 when up to date).
    /// - Throws: `MigrationError` (`.failed` wraps the `PostgresError`; earlier migrations of
    ///   this call stay applied), or `PostgresError`.
    @discardableResult
    public static func migrate(_ db: PostgresDatabase, _ migrations: [Migration]) throws -> Int {
        let sorted = try MigrationPlan.checkedSorted(migrations)
        return try db.pool.withConnection { connection in
            try connection.query("SELECT pg_advisory_lock($1::bigint)", [.integer(lockKey)])
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1::bigint)", [.integer(lockKey)]) }
            try connection.execute(MigrationPlan.createTableSQL)
            return try MigrationPlan.applyPending(sorted, on: Session(connection: connection))
        }
    }

    /// The migration connection as `MigrationPlan.applyPending` drives it.
    private struct Session: MigrationSession {
        let connection: PostgresConnection

        let beginSQL = "BEGIN ISOLATION LEVEL READ COMMITTED"
        var isInTransaction: Bool { connection.isHealthy && connection.isInTransaction }
        func execute(_ sql: String) throws { try connection.execute(sql) }
        func recorded() throws -> [AppliedMigration] { try readApplied(connection) }
        func record(_ migration: Migration) throws {
            try connection.update(
                """
                INSERT INTO schema_migrations (version, name, checksum, applied_at)
                VALUES ($1, $2, $3, to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                """, [.int(migration.version), .text(migration.name), .text(migration.checksum)])
        }
    }

    /// The migrations not applied yet, in order (ready when empty).
    /// - Throws: the consistency errors of `migrate`, or `PostgresError`.
    public static func pending(_ db: PostgresDatabase, _ migrations: [Migration]) throws -> [Migration] {
        let sorted = try MigrationPlan.checkedSorted(migrations)
        return try MigrationPlan.plan(recorded: try applied(db), sorted)
    }

    /// The rows of `schema_migrations` in version order (empty when the table is absent).
    /// - Throws: `PostgresError`.
    public static func applied(_ db: PostgresDatabase) throws -> [AppliedMigration] {
        try db.read { connection in
            let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL")
            guard exists.first?[0] == .integer(1) else { return [] }
            return try readApplied(connection)
        }
    }

    private static func readApplied(_ connection: PostgresConnection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version").map { row in
            guard case .integer(let version) = row[0], case .text(let name) = row[1], case .text(let checksum) = row[2],
                case .text(let appliedAt) = row[3]
            else {
                throw PostgresError(kind: .decoding, message: "schema_migrations row")
            }
            return AppliedMigration(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt)
        }
    }
}
