import Foundation
import SuplashCrypto

/// One schema migration: the file `NNNN_name.sql` (`version` = `NNNN`, at least 4 digits).
public struct Migration: Sendable, Equatable {
    /// Version number (≥ 1); migrations apply in ascending order.
    public let version: Int
    /// The part of the file name after `NNNN_`, without `.sql`.
    public let name: String
    /// The SQL script (UTF-8). Must not contain transaction control statements: the migrator
    /// wraps it in a transaction. `PRAGMA foreign_keys` cannot change inside a transaction.
    public let sql: String
    /// SHA-256 of the file bytes as 64 lower-case hex characters.
    public let checksum: String

    /// Creates a migration from SQL text; `checksum` is the SHA-256 hex of `sql`'s UTF-8 bytes
    /// (equal to the file checksum when loaded from a file).
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hex(Array(sql.utf8))
    }
}

/// Why loading or applying migrations failed. `description` is safe to log and print
/// (versions, names and file names only).
public enum MigrationError: Error, CustomStringConvertible {
    /// The directory could not be listed.
    case unreadableDirectory(path: String)
    /// A `.sql` file whose name is not `NNNN_name.sql` (≥ 4 digits, version ≥ 1, name of
    /// `[A-Za-z0-9_-]`).
    case badFileName(String)
    /// A file could not be read, or is not valid UTF-8.
    case unreadableFile(String)
    /// Two files share a version.
    case duplicateVersion(Int, files: [String])
    /// An applied migration's file changed since it was applied.
    case checksumMismatch(version: Int, name: String)
    /// An applied migration's file was renamed (same version, other name).
    case nameMismatch(version: Int, applied: String, file: String)
    /// A migration recorded as applied has no file any more.
    case missingMigration(version: Int, name: String)
    /// A pending migration is older than the newest applied one (e.g. after a merge).
    case outOfOrder(version: Int, name: String, latestApplied: Int)
    /// Running a migration's SQL failed; nothing of it was applied.
    case failed(version: Int, name: String, underlying: any Error)

    /// A one-line English explanation naming versions, names and file names only (no SQL,
    /// no SQLite message): safe to log and to print from the CLI.
    public var description: String {
        switch self {
        case .unreadableDirectory(let path):
            "cannot list the migrations directory \(path)"
        case .badFileName(let file):
            "migration file \(file) is not named NNNN_name.sql (at least 4 digits, version >= 1, name of letters, digits, '_' or '-')"
        case .unreadableFile(let file):
            "migration file \(file) cannot be read or is not valid UTF-8"
        case .duplicateVersion(let version, let files):
            "migration version \(version) appears in more than one file: \(files.joined(separator: ", "))"
        case .checksumMismatch(let version, let name):
            "migration \(version) (\(name)) was changed after it was applied (checksum mismatch); nothing was applied. Restore the original file and add a new migration instead."
        case .nameMismatch(let version, let applied, let file):
            "migration \(version) was applied as \(applied) but the file is now named \(file); nothing was applied"
        case .missingMigration(let version, let name):
            "migration \(version) (\(name)) is recorded as applied but its file is missing; nothing was applied"
        case .outOfOrder(let version, let name, let latest):
            "migration \(version) (\(name)) is pending but the newer migration \(latest) is already applied; nothing was applied"
        case .failed(let version, let name, let underlying):
            "migration \(version) (\(name)) failed and was rolled back: \(String(reflecting: type(of: underlying)))\((underlying as? StorageError).map { " \($0)" } ?? "")"
        }
    }
}

/// A row of `schema_migrations`.
public struct AppliedMigration: Sendable, Equatable {
    /// Migration version.
    public let version: Int
    /// Name recorded when applied.
    public let name: String
    /// Checksum recorded when applied (SHA-256 hex).
    public let checksum: String
    /// When it was applied: UTC, `YYYY-MM-DDTHH:MM:SS.SSSZ` (RFC 3339).
    public let appliedAt: String

    /// Creates a row as read back from a store's `schema_migrations` table.
    public init(version: Int, name: String, checksum: String, appliedAt: String) {
        self.version = version
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

/// Loads `NNNN_name.sql` files and applies them in order, each in its own transaction with
/// its row in `schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL,
/// checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`.
///
/// Migrations run as one `SQLiteDatabase.writeExclusive` job: no group write interleaves, and
/// each step takes `BEGIN IMMEDIATE`, so two processes migrating the same file at once apply
/// every migration exactly once (the second re-reads the table under the write lock).
public enum Migrator {
    /// Reads every `*.sql` file of `directory` (other files and dot-files are ignored),
    /// sorted by version.
    /// - Throws: `MigrationError` `.unreadableDirectory`, `.badFileName`, `.unreadableFile`,
    ///   `.duplicateVersion`.
    public static func load(directory: String) throws -> [Migration] {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw MigrationError.unreadableDirectory(path: directory)
        }
        var migrations: [(Migration, String)] = []
        for file in entries.sorted() where !file.hasPrefix(".") && file.hasSuffix(".sql") {
            guard let (version, name) = parseFileName(file) else { throw MigrationError.badFileName(file) }
            let fullPath = (directory as NSString).appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: fullPath) else {
                throw MigrationError.unreadableFile(file)
            }
            let bytes = [UInt8](data)
            guard let sql = String(validating: bytes, as: UTF8.self) else {
                throw MigrationError.unreadableFile(file)
            }
            let migration = Migration(version: version, name: name, sql: sql, checksum: SHA256.hex(bytes))
            migrations.append((migration, file))
        }
        migrations.sort { $0.0.version < $1.0.version }
        for i in migrations.indices.dropFirst() where migrations[i].0.version == migrations[i - 1].0.version {
            let version = migrations[i].0.version
            throw MigrationError.duplicateVersion(version, files: migrations.filter { $0.0.version == version }.map(\.1))
        }
        return migrations.map(\.0)
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
        let sorted = try checkedSorted(migrations)
        return try db.writeExclusive { context in
            let connection = context.connection
            try connection.execute(createTable)
            var applied = 0
            while true {
                try connection.execute("BEGIN IMMEDIATE")
                do {
                    let pending = try plan(recorded: try readApplied(connection), sorted)
                    guard let next = pending.first else {
                        try connection.execute("COMMIT")
                        return applied
                    }
                    do {
                        try connection.execute(next.sql)
                    } catch {
                        throw MigrationError.failed(version: next.version, name: next.name, underlying: error)
                    }
                    try connection.run(
                        "INSERT INTO schema_migrations(version, name, checksum, applied_at) VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                        [.int(next.version), .text(next.name), .text(next.checksum)])
                    try connection.execute("COMMIT")
                    applied += 1
                } catch {
                    if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                    throw error
                }
            }
        }
    }

    /// The migrations not applied yet, in order (for `/readyz`: ready when empty). Reads
    /// through a reader connection; an absent `schema_migrations` table means all pending.
    /// - Throws: the same consistency errors as `migrate` (`.checksumMismatch`, …), or
    ///   `StorageError`.
    public static func pending(_ db: SQLiteDatabase, _ migrations: [Migration]) throws -> [Migration] {
        let sorted = try checkedSorted(migrations)
        return try db.read { connection in
            try plan(recorded: try applied(on: connection), sorted)
        }
    }

    /// The rows of `schema_migrations` in version order (empty if the table does not exist).
    /// - Throws: `StorageError`.
    public static func applied(_ db: SQLiteDatabase) throws -> [AppliedMigration] {
        try db.read { try applied(on: $0) }
    }

    // MARK: - Internals

    static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    private static func applied(on connection: SQLiteConnection) throws -> [AppliedMigration] {
        let exists = try connection.scalarInt64(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") ?? 0
        return exists == 0 ? [] : try readApplied(connection)
    }

    private static func readApplied(_ connection: SQLiteConnection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version").map {
            AppliedMigration(version: Int(try $0.int64(0)), name: try $0.string(1),
                             checksum: try $0.string(2), appliedAt: try $0.string(3))
        }
    }

    /// Validates `recorded` against `sorted` (ascending versions) and returns the pending
    /// migrations in order. Shared by every store's migrator, so the rules are the same on
    /// SQLite and PostgreSQL.
    /// - Throws: `MigrationError` `.missingMigration`, `.checksumMismatch`, `.nameMismatch`,
    ///   `.outOfOrder`.
    public static func plan(recorded: [AppliedMigration], _ sorted: [Migration]) throws -> [Migration] {
        var byVersion: [Int: Migration] = [:]
        for migration in sorted { byVersion[migration.version] = migration }
        var latest = 0
        for row in recorded {
            guard let migration = byVersion[row.version] else {
                throw MigrationError.missingMigration(version: row.version, name: row.name)
            }
            guard migration.checksum == row.checksum else {
                throw MigrationError.checksumMismatch(version: row.version, name: migration.name)
            }
            guard migration.name == row.name else {
                throw MigrationError.nameMismatch(version: row.version, applied: row.name, file: migration.name)
            }
            latest = max(latest, row.version)
        }
        let appliedVersions = Set(recorded.map(\.version))
        let pending = sorted.filter { !appliedVersions.contains($0.version) }
        if let first = pending.first, first.version < latest {
            throw MigrationError.outOfOrder(version: first.version, name: first.name, latestApplied: latest)
        }
        return pending
    }

    /// `migrations` sorted by version.
    /// - Throws: `MigrationError.duplicateVersion` when two share a version.
    public static func checkedSorted(_ migrations: [Migration]) throws -> [Migration] {
        let sorted = migrations.sorted { $0.version < $1.version }
        for i in sorted.indices.dropFirst() where sorted[i].version == sorted[i - 1].version {
            throw MigrationError.duplicateVersion(sorted[i].version, files: [sorted[i - 1].name, sorted[i].name])
        }
        return sorted
    }

    /// `"0001_create_users.sql"` → `(1, "create_users")`; `nil` for anything else.
    static func parseFileName(_ file: String) -> (Int, String)? {
        guard file.hasSuffix(".sql") else { return nil }
        let stem = file.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard digits.count >= 4, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let version = Int(digits), version >= 1,
              !name.isEmpty,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return (version, String(name))
    }
}

extension Migration {
    init(version: Int, name: String, sql: String, checksum: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = checksum
    }
}
