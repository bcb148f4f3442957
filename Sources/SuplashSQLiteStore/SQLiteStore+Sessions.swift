import SuplashDomain
import SuplashStorage
import SuplashStoreCore

/// Sessions are written once in `SuplashStoreCore` (Sessions.swift).
extension SQLiteStore: SessionRepository {
    /// `SessionStatements.insert` on `c` (inside a write job of another use case).
    static func insertSession(_ c: SQLiteConnection, _ s: NewSession) throws {
        try SessionStatements.insert(SQLiteStatements(c), s)
    }
}
