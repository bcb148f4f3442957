import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashStoreRows

extension PostgresStore: OperationsRepository {
    /// Admin-only counts, read in one snapshot; `databaseBytes` is `pg_database_size` of the
    /// current database.
    public func adminStats(dayStart: Int64, thirtyDaysAgo: Int64) throws -> AdminStats {
        try snapshotRead { c in
            let users = try c.scalarInt64("SELECT count(*) FROM users") ?? 0
            let today =
                try c.scalarInt64(
                    "SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= $1",
                    [.integer(dayStart)]) ?? 0
            let month =
                try c.scalarInt64(
                    "SELECT count(DISTINCT user_id) FROM water_entries WHERE updated_at >= $1",
                    [.integer(thirtyDaysAgo)]) ?? 0
            let entries =
                try c.scalarInt64(
                    "SELECT count(*) FROM water_entries WHERE created_at >= $1 AND deleted = 0",
                    [.integer(dayStart)]) ?? 0
            let bytes = try c.scalarInt64("SELECT pg_database_size(current_database())") ?? 0
            return AdminStats(
                users: Int(users), activeUsersToday: Int(today), activeUsers30d: Int(month),
                entriesToday: Int(entries), databaseBytes: bytes)
        }
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
