import SuplashCrypto
import SuplashSQL

/// Loads `NNNN_name.sql` files and applies them in order, each in its own transaction with
/// its row in `schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL,
/// checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`.
///
/// Migrations run as one `SQLiteDatabase.writeExclusive` job: no group write interleaves, and
/// each step takes `BEGIN IMMEDIATE`, so two processes migrating the same file at once apply
/// every migration exactly once (the second re-reads the table under the write lock).
public enum Migrator {
    /// Reads every `*.sql` file of `directory` (other files and dot-files are ignored),
    /// sorted by version, each with the SHA-256 (OpenSSL) of its bytes as its checksum.
    /// Used for both engines' migration directories (`MigrationPlan.load`).
    /// - Throws: `MigrationError` `.unreadableDirectory`, `.badFileName`, `.unreadableFile`,
    ///   `.duplicateVersion`.
    public static func load(directory: String) throws -> [Migration] {
        try MigrationPlan.load(directory: directory, checksum: SHA256.hex)
    }

    /// Applies every pending migration in version order, on the writer thread, each in its
    /// own transaction together with its `schema_migrations` row.
    ///
    /// Before applying anything it checks the recorded migrations against `migrations`:
    /// a changed file throws `.checksumMismatch`, a renamed one `.nameMismatch`, a missing
    /// one `.missingMigration`, a pending one older than the newest applied `.outOfOrder` —
    /// and then nothing is applied.
    /// - Returns: how many migrations were applied (0 when up to date).
    /// - Throws: `MigrationError` (`.failed` wraps the SQL error; earlier migrations of this
    ///   call stay applied), `.duplicateVersion` if `migrations` repeats a version, or
    ///   `StorageError` (e.g. `.busy`).
    @discardableResult
    public static func migrate(_ db: SQLiteDatabase, _ migrations: [Migration]) throws -> Int {
        let sorted = try MigrationPlan.checkedSorted(migrations)
        return try db.writeExclusive { context in
            let connection = context.connection
            try connection.execute(MigrationPlan.createTableSQL)
            return try MigrationPlan.applyPending(sorted, on: Session(connection: connection))
        }
    }

    /// The writer connection as `MigrationPlan.applyPending` drives it.
    private struct Session: MigrationSession {
        let connection: SQLiteConnection

        let beginSQL = "BEGIN IMMEDIATE"
        var isInTransaction: Bool { connection.isInTransaction }
        func execute(_ sql: String) throws { try connection.execute(sql) }
        func recorded() throws -> [AppliedMigration] { try readApplied(connection) }
        func record(_ migration: Migration) throws {
            try connection.run(
                "INSERT INTO schema_migrations(version, name, checksum, applied_at) VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                [.int(migration.version), .text(migration.name), .text(migration.checksum)])
        }
    }

    /// The migrations not applied yet, in order (for `/readyz`: ready when empty). Reads
    /// through a reader connection; an absent `schema_migrations` table means all pending.
    /// - Throws: the same consistency errors as `migrate` (`.checksumMismatch`, …), or
    ///   `StorageError`.
    public static func pending(_ db: SQLiteDatabase, _ migrations: [Migration]) throws -> [Migration] {
        let sorted = try MigrationPlan.checkedSorted(migrations)
        return try db.read { connection in
            try MigrationPlan.plan(recorded: try applied(on: connection), sorted)
        }
    }

    /// The rows of `schema_migrations` in version order (empty if the table does not exist).
    /// - Throws: `StorageError`.
    public static func applied(_ db: SQLiteDatabase) throws -> [AppliedMigration] {
        try db.read { try applied(on: $0) }
    }

    // MARK: - Internals

    private static func applied(on connection: SQLiteConnection) throws -> [AppliedMigration] {
        let exists =
            try connection.scalarInt64(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") ?? 0
        return exists == 0 ? [] : try readApplied(connection)
    }

    private static func readApplied(_ connection: SQLiteConnection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version").map {
            AppliedMigration(
                version: Int(try $0.int64(0)), name: try $0.string(1),
                checksum: try $0.string(2), appliedAt: try $0.string(3))
        }
    }

}

extension Migration {
    /// Creates a migration from SQL text; `checksum` is the SHA-256 hex (OpenSSL) of `sql`'s
    /// UTF-8 bytes (equal to the file checksum when loaded from a file).
    public init(version: Int, name: String, sql: String) {
        self.init(version: version, name: name, sql: sql, checksum: SHA256.hex(Array(sql.utf8)))
    }
}

extension StorageError: SafelyDescribedError {}
