import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore

/// `PostgresStore` as a `SQLStore`: the use cases of `SuplashStoreCore` run in `write`'s
/// transactions (READ COMMITTED, re-run on unique violations, serialization failures and
/// deadlocks) and on `read`'s pooled connections.
extension PostgresStore: SQLStore {
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) throws -> T) throws -> T {
        try write(body)
    }

    public func reading<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try read(body)
    }
}

/// A pooled connection (or a transaction's) runs the statements of a use case.
extension PostgresConnection: SQLExecutor {
    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// `update(sql, args)` (one round trip): the rows changed.
    public func execute(_ sql: String, _ args: [SQLValue]) throws -> Int {
        try update(sql, args)
    }
}

/// A PostgreSQL transaction is the transaction of a use case.
extension PostgresTransaction: StoreTransaction {
    /// `NOTIFY suplash_revocations` with the commit (`PostgresRevocationEvent`): delivered if
    /// and only if the transaction commits.
    public func announce(_ revocation: StoreRevocation) {
        let event: PostgresRevocationEvent =
            switch revocation {
            case .session(let id): .session(id: id)
            case .adminKeys: .adminKeys
            }
        notify(channel: PostgresClusterChannel.revocations, payload: event.payload)
    }
}

extension PostgresStore: AdminKeyRepository {}
extension PostgresStore: SessionRepository {}
