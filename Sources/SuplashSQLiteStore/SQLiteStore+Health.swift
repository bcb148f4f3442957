import SuplashDomain
import SuplashStorage

extension SQLiteStore: StorageWriteProbe {
    /// The write probe on SQLite: `SQLiteDatabase.probeWritability` (a fresh allocation
    /// beside the database, then `BEGIN IMMEDIATE` … `ROLLBACK` on the writer), which
    /// neither grows the database nor writes the WAL.
    /// - Throws: `RepositoryError.storage`, or `.unavailable` for an unclassified failure.
    public func probeWrite() throws {
        do {
            try database.probeWritability()
        } catch let error as StorageError {
            throw map(error)
        }
    }
}
