import SuplashDomain
import SuplashStorage
import SuplashStoreCore

extension SQLiteStore {
    /// Reads one entry row (live or tombstone) with its last-write-wins stamp
    /// (`EntryStatements.fetch`), for the sync push until it is written once.
    static func fetchEntry(_ c: SQLiteConnection, userID: String, id: String) throws -> Stamped<WaterEntry>? {
        let read = EntryStatements.fetch(userID: userID, id: id, lock: false)
        return EntryStatements.stamped(try c.query(read.sql, read.args))
    }
}
