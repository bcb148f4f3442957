import Foundation

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

    /// Creates a migration from SQL text and its checksum (64 lower-case hex characters, the
    /// SHA-256 of the file bytes). This target has no C dependency, so it does not hash:
    /// `SuplashStorage`'s `Migrator.load(directory:)` and `Migration(version:name:sql:)` hash
    /// with OpenSSL and call this.
    public init(version: Int, name: String, sql: String, checksum: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = checksum
    }
}

/// Why loading, planning or applying migrations failed (either engine). `description` is safe to log and print
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
    /// no engine message; for `.failed`, the underlying error's type and, when it is a
    /// `SafelyDescribedError`, its `description`): safe to log and to print from the CLI.
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
            "migration \(version) (\(name)) failed and was rolled back: \(String(reflecting: type(of: underlying)))\((underlying as? SafelyDescribedError).map { " \($0)" } ?? "")"
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

/// An error whose `description` names no SQL text, no values and no engine message (kinds
/// and codes only), so `MigrationError.failed` may append it to its own safe description.
/// `SuplashStorage` makes `StorageError` one.
public protocol SafelyDescribedError: Error, CustomStringConvertible {}

/// The engine-neutral half of schema migrations: loading `NNNN_name.sql` files and deciding
/// which are pending. Each engine applies the plan in its own transactions and records each
/// migration in `schema_migrations(version, name, checksum, applied_at)`:
/// `Migrator` (SQLite, `SuplashStorage`) and `PostgresMigrator` (`SuplashPostgres`).
///
/// Typical use by an engine's migrator:
/// ```swift
/// let sorted = try MigrationPlan.checkedSorted(migrations)
/// // in a transaction, under the engine's migration lock:
/// let pending = try MigrationPlan.plan(recorded: readAppliedRows(), sorted)
/// // apply `pending.first`, record it, commit, repeat
/// ```
public enum MigrationPlan {
    /// Reads every `*.sql` file of `directory` (other files and dot-files are ignored),
    /// sorted by version. `checksum` turns a file's bytes into its checksum (SHA-256 as 64
    /// lower-case hex characters: pass OpenSSL's, e.g. `SuplashCrypto`'s `SHA256.hex`; this
    /// target hashes nothing itself).
    /// - Throws: `MigrationError` `.unreadableDirectory`, `.badFileName`, `.unreadableFile`,
    ///   `.duplicateVersion`.
    public static func load(directory: String, checksum: ([UInt8]) -> String) throws -> [Migration] {
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
            let migration = Migration(version: version, name: name, sql: sql, checksum: checksum(bytes))
            migrations.append((migration, file))
        }
        migrations.sort { $0.0.version < $1.0.version }
        for i in migrations.indices.dropFirst() where migrations[i].0.version == migrations[i - 1].0.version {
            let version = migrations[i].0.version
            throw MigrationError.duplicateVersion(version, files: migrations.filter { $0.0.version == version }.map(\.1))
        }
        return migrations.map(\.0)
    }

    /// Validates `recorded` against `sorted` (ascending versions) and returns the pending
    /// migrations in order. Shared by both engines' migrators (`Migrator`,
    /// `PostgresMigrator`), so the rules are the same on SQLite and PostgreSQL.
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

    /// The `schema_migrations` table, the same on every engine (`CREATE TABLE IF NOT EXISTS`).
    public static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    /// `migrations` sorted by version.
    /// - Throws: `MigrationError.duplicateVersion` when two share a version.
    public static func checkedSorted(_ migrations: [Migration]) throws -> [Migration] {
        let sorted = migrations.sorted { $0.version < $1.version }
        for i in sorted.indices.dropFirst() where sorted[i].version == sorted[i - 1].version {
            throw MigrationError.duplicateVersion(sorted[i].version, files: [sorted[i - 1].name, sorted[i].name])
        }
        return sorted
    }

    /// Applies the pending migrations of `sorted` (from `checkedSorted`) one by one, each in
    /// its own transaction together with its `schema_migrations` row: begin, re-read what is
    /// recorded, `plan`, run the first pending script, record it, commit — until none is
    /// pending. The engine supplies the steps (`MigrationSession`); the order and the checks
    /// are the same on every engine.
    /// - Returns: how many were applied (0 when up to date).
    /// - Throws: `plan`'s consistency errors (nothing applied by that round),
    ///   `MigrationError.failed` wrapping a script's error (earlier migrations of this call stay
    ///   applied), or the session's error; the open transaction is rolled back first.
    public static func applyPending(_ sorted: [Migration], on session: some MigrationSession) throws -> Int {
        var applied = 0
        while true {
            try session.begin()
            do {
                guard let next = try plan(recorded: try session.recorded(), sorted).first else {
                    try session.commit()
                    return applied
                }
                do {
                    try session.run(script: next.sql)
                } catch {
                    throw MigrationError.failed(version: next.version, name: next.name, underlying: error)
                }
                try session.record(next)
                try session.commit()
                applied += 1
            } catch {
                session.rollback()
                throw error
            }
        }
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

/// One engine's connection as `MigrationPlan.applyPending` drives it (SQLite's writer,
/// PostgreSQL's migration connection under its advisory lock): the engine supplies how to run
/// parameterless SQL, its `BEGIN`, and the `schema_migrations` reads and inserts.
public protocol MigrationSession {
    /// The statement that opens a write transaction (`BEGIN IMMEDIATE` on SQLite, READ
    /// COMMITTED on PostgreSQL).
    var beginSQL: String { get }
    /// True while a transaction is open.
    var isInTransaction: Bool { get }
    /// Runs parameterless SQL, possibly several `;`-separated statements (a migration script).
    /// - Throws: the engine's error.
    func execute(_ sql: String) throws
    /// The rows of `schema_migrations` in version order.
    /// - Throws: the engine's error.
    func recorded() throws -> [AppliedMigration]
    /// Records `migration` in `schema_migrations` with the current UTC time.
    /// - Throws: the engine's error.
    func record(_ migration: Migration) throws
}

extension MigrationSession {
    func begin() throws { try execute(beginSQL) }
    func run(script: String) throws { try execute(script) }
    func commit() throws { try execute("COMMIT") }
    func rollback() { if isInTransaction { try? execute("ROLLBACK") } }
}
