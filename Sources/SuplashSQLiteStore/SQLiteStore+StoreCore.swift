import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreCore

/// `SQLiteStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run on the single
/// writer's group commit (`transaction`) and on the reader pool (`reading`).
extension SQLiteStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteStatements) throws -> T) throws -> T {
        try write { ctx in try body(SQLiteStatements(ctx.connection)) }
    }

    public func reading<T>(_ body: (SQLiteStatements) throws -> T) throws -> T {
        try read { c in try body(SQLiteStatements(c)) }
    }
}

/// A SQLite connection as a `StoreTransaction` (the writer's, inside a write job) or a
/// `SQLExecutor` (a reader's). Valid only during the job or read that made it.
public struct SQLiteStatements: StoreTransaction {
    let connection: SQLiteConnection

    init(_ connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// `SQLiteConnection.query` of `sql.sqlite`.
    public func query(_ sql: SQLText, _ args: [SQLValue]) throws -> [SQLiteRow] {
        try connection.query(sql.sqlite, args)
    }

    /// `SQLiteConnection.run` of `sql.sqlite`: the rows changed.
    @discardableResult
    public func execute(_ sql: SQLText, _ args: [SQLValue]) throws -> Int {
        try connection.run(sql.sqlite, args)
    }

    /// A no-op: one process, whose routes update its revocation view themselves.
    public func announce(_ revocation: StoreRevocation) {}
}

extension SQLiteStore: AdminKeyRepository {}
