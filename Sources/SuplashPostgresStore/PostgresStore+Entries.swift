import SuplashDomain
import SuplashPostgres
import SuplashStoreCore

extension PostgresStore {
    /// Reads one entry row (live or tombstone) with its last-write-wins stamp
    /// (`EntryStatements.fetch`), for the sync push and batches until they are written once.
    static func fetchEntry(_ c: PostgresConnection, userID: String, id: String, lock: Bool) throws -> Stamped<WaterEntry>? {
        let read = EntryStatements.fetch(userID: userID, id: id, lock: lock)
        return EntryStatements.stamped(try c.query(read.sql, read.args))
    }
}
