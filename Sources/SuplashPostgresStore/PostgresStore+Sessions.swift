import SuplashDomain
import SuplashPostgres
import SuplashStoreCore

/// Sessions are written once in `SuplashStoreCore` (Sessions.swift).
extension PostgresStore: SessionRepository {
    /// `SessionStatements.insert` on `c` (inside a transaction of another use case).
    static func insertSession(_ c: PostgresConnection, _ s: NewSession) throws {
        try SessionStatements.insert(PostgresStatements(c), s)
    }
}
