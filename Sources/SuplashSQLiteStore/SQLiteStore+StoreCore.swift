import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreCore

/// `SQLiteStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run as jobs of the single
/// writer's group commit (`transaction`, durable before it returns) and on the reader pool
/// (`reading`).
extension SQLiteStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (WriteContext) throws -> T) throws -> T {
        try write(body)
    }

    public func reading<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try read(body)
    }
}

/// A reader's (or the writer's) connection runs the statements of a use case.
extension SQLiteConnection: SQLExecutor {
    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// `run(sql, args)`: the rows changed.
    public func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        try run(sql, args)
    }
}

/// A write job is the transaction of a use case.
extension WriteContext: StoreTransaction {
    /// A no-op: one process, whose routes update its revocation view themselves.
    public func announce(_ revocation: StoreRevocation) {}
}

extension SQLiteStore: AdminKeyRepository {}
extension SQLiteStore: SessionRepository {}
