import Foundation
import SuplashPostgres
import SuplashStorage
import XCTest

/// Shared set-up of the PostgreSQL tests: they need `SUPLASH_TEST_POSTGRES_URL`
/// (`scripts/with-postgres` exports it) and skip without it, so plain `swift test` stays green.
enum PostgresTestSupport {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The URL, or an `XCTSkip`.
    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set (run under scripts/with-postgres)")
        }
        return url
    }

    /// An empty `public` schema (everything of the previous test dropped).
    static func freshDatabase(poolSize: Int = 8) throws -> PostgresDatabase {
        let db = try PostgresDatabase(url: try url(), poolSize: poolSize)
        try db.read { c in
            try c.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        }
        return db
    }

    /// A fresh database with `Migrations/postgres` applied.
    static func migratedDatabase(poolSize: Int = 8) throws -> PostgresDatabase {
        let db = try freshDatabase(poolSize: poolSize)
        try PostgresMigrator.migrate(db, try Migrator.load(directory: packageRoot + "/Migrations/postgres"))
        return db
    }
}

/// A value shared between threads of a test.
///
/// `@unchecked Sendable`: `value` is guarded by `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.withLock { body(&value) }
    }

    var current: Value { lock.withLock { value } }
}
