import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore

/// `PostgresStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run in `write`'s
/// transactions (READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks) and on `read`'s pooled connections.
extension PostgresStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresStoreTransaction) throws -> T) throws -> T {
        try write { tx in try body(PostgresStoreTransaction(tx)) }
    }

    public func reading<T>(_ body: (PostgresStatements) throws -> T) throws -> T {
        try read { c in try body(PostgresStatements(c)) }
    }
}

/// A PostgreSQL connection as a `SQLExecutor` (a read, or statements inside a transaction the
/// caller runs). Valid only during the read or transaction that made it.
public struct PostgresStatements: SQLExecutor {
    let connection: PostgresConnection

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// `PostgresConnection.query` of `sql.postgres` (one round trip).
    public func query(_ sql: SQLText, _ args: [SQLValue]) throws -> [PostgresRow] {
        try connection.query(sql.postgres, args)
    }

    /// `PostgresConnection.update` of `sql.postgres` (one round trip): the rows changed.
    @discardableResult
    public func execute(_ sql: SQLText, _ args: [SQLValue]) throws -> Int {
        try connection.update(sql.postgres, args)
    }
}

/// A `PostgresTransaction` as a `StoreTransaction`. Valid only inside the transaction.
public struct PostgresStoreTransaction: StoreTransaction {
    let transaction: PostgresTransaction

    init(_ transaction: PostgresTransaction) {
        self.transaction = transaction
    }

    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// `PostgresConnection.query` of `sql.postgres` (one round trip).
    public func query(_ sql: SQLText, _ args: [SQLValue]) throws -> [PostgresRow] {
        try transaction.connection.query(sql.postgres, args)
    }

    /// `PostgresConnection.update` of `sql.postgres` (one round trip): the rows changed.
    @discardableResult
    public func execute(_ sql: SQLText, _ args: [SQLValue]) throws -> Int {
        try transaction.connection.update(sql.postgres, args)
    }

    /// `NOTIFY suplash_revocations` with the commit (`PostgresRevocationEvent`): delivered
    /// if and only if the transaction commits.
    public func announce(_ revocation: StoreRevocation) {
        let event: PostgresRevocationEvent =
            switch revocation {
            case .session(let id): .session(id: id)
            case .adminKeys: .adminKeys
            }
        transaction.notify(channel: PostgresClusterChannel.revocations, payload: event.payload)
    }
}

extension PostgresStore: AdminKeyRepository {}
