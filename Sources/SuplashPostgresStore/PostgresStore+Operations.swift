import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashStoreCore

/// What PostgreSQL does its own way for `OperationsRepository` (the admin figures are written
/// once in `SuplashStoreCore`): the database size and the online backup.
extension PostgresStore: DatabaseSizing {
    /// `pg_database_size` of the current database (one round trip).
    /// - Throws: `RepositoryError` (the storage failure mapped).
    public func databaseBytes() throws -> Int64 {
        try read { c in try c.query("SELECT pg_database_size(current_database())").first?[0].int64 ?? 0 }
    }

    /// A consistent online snapshot with `pg_dump --format=custom` (one REPEATABLE READ
    /// snapshot; restore with `pg_restore`). Needs the PostgreSQL client tools on `PATH`.
    /// The URL is passed as `pg_dump --dbname`, so keep passwords out of it (use a Unix
    /// socket with peer authentication, or `~/.pgpass`). For point-in-time recovery use
    /// base backups with WAL archiving instead.
    /// The file is created with mode 0600 before `pg_dump` writes it.
    /// - Throws: `RepositoryError.unavailable` when `path` exists, `pg_dump` is missing or fails.
    public func backup(to path: String) throws -> Int64 {
        // Created here, owner-only (the dump holds emails and password hashes); pg_dump
        // writes into it and keeps the mode. An existing file is never overwritten.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RepositoryError.unavailable }
        close(fd)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pg_dump", "--format=custom", "--no-owner", "--file=\(path)", "--dbname=\(database.url)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw RepositoryError.unavailable
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        else {
            try? FileManager.default.removeItem(atPath: path)
            throw RepositoryError.unavailable
        }
        return size.int64Value
    }
}

extension PostgresStore {
    /// `SealedValueRepository.compactAfterSealing`: `VACUUM device_tokens` (dead row versions
    /// of the plaintext rows are removed from the table's pages; the cluster's WAL and earlier
    /// base backups still hold what was written before, docs/apple.md "Sealed secrets").
    /// - Throws: `RepositoryError` (the storage failure mapped).
    public func compactAfterSealing() throws {
        _ = try read { c in try c.query("VACUUM device_tokens") }
    }
}
