import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage

/// Every repository protocol `serve` uses; `SQLiteStore` and `PostgresStore` both adopt all.
typealias SuplashStore = UserRepository & SessionRepository & AdminKeyRepository & WaterEntryRepository
    & HydrationRepository & BillRepository & AccountDataRepository & EmailCodeRepository & OutboxRepository
    & AppleIdentityRepository & OperationsRepository & SyncRepository & IdempotencyRepository
    & WaterEntryBatchRepository & StorageWriteProbe & DeviceRepository & AppleRevokeJobRepository
    & SealedValueRepository & AppleAccountEventRepository & PushOutboxRepository & ReminderRepository
    & CampaignRepository

/// The configured store (`storage.driver`): its database, migrations and adapter.
enum StorageBackend {
    /// The embedded default: one SQLite file.
    case sqlite(SQLiteDatabase)
    /// PostgreSQL (several instances on one database): a pool on `storage.postgresUrl`.
    case postgres(PostgresDatabase)

    /// The repository adapter, how to hear about commits (for long-poll wake-ups), and on
    /// PostgreSQL the same adapter as `PostgresStore` (for the cross-instance listener).
    /// - Parameter health: where the store records its classified storage failures.
    func makeStore(health: StorageHealth = StorageHealth())
        -> (store: any SuplashStore, subscribe: (@escaping @Sendable (String) -> Void) -> Void, postgres: PostgresStore?)
    {
        switch self {
        case .sqlite(let database):
            let store = SQLiteStore(database: database, health: health)
            return (store, { store.changeNotifier.subscribe($0) }, nil)
        case .postgres(let database):
            let store = PostgresStore(database: database, health: health)
            return (store, { store.changeNotifier.subscribe($0) }, store)
        }
    }

    /// Applies pending migrations; returns how many.
    /// - Throws: `MigrationError` or the store's error.
    func migrate(_ migrations: [Migration]) throws -> Int {
        switch self {
        case .sqlite(let database): try Migrator.migrate(database, migrations)
        case .postgres(let database): try PostgresMigrator.migrate(database, migrations)
        }
    }

    /// The recorded migrations, in version order.
    func applied() throws -> [AppliedMigration] {
        switch self {
        case .sqlite(let database): try Migrator.applied(database)
        case .postgres(let database): try PostgresMigrator.applied(database)
        }
    }

    /// `/readyz`: true when no migration is pending and the database answers.
    func readiness(_ migrations: [Migration]) -> @Sendable () -> Bool {
        switch self {
        case .sqlite(let database):
            return { (try? Migrator.pending(database, migrations).isEmpty) ?? false }
        case .postgres(let database):
            return { (try? PostgresMigrator.pending(database, migrations).isEmpty) ?? false }
        }
    }

    /// The store's database, named for messages: the SQLite file, or "the PostgreSQL database".
    var name: String {
        switch self {
        case .sqlite(let database): database.path
        case .postgres: "the PostgreSQL database"
        }
    }

    /// True when the database holds at least one account (after migrations).
    /// - Throws: the store's error.
    func holdsAccounts() throws -> Bool {
        switch self {
        case .sqlite(let database):
            try database.read { c in
                guard try c.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'users'") == 1 else {
                    return false
                }
                return try c.scalarInt64("SELECT EXISTS (SELECT 1 FROM users)") == 1
            }
        case .postgres(let database):
            try database.read { c in
                try c.query("SELECT to_regclass('users') IS NOT NULL").first?[0] == .integer(1)
                    && !(try c.query("SELECT 1 FROM users LIMIT 1")).isEmpty
            }
        }
    }

    /// Closes the database (its connections).
    func close() {
        switch self {
        case .sqlite(let database):
            database.close()
        case .postgres(let database):
            database.close()
        }
    }
}
