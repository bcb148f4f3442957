import SuplashDomain
import SuplashSQL

/// A transaction that can take the tombstone purge's lock: one purge at a time across server
/// instances (each runs the maintenance timer). PostgreSQL: a transaction-level advisory lock
/// (`PostgresTransaction.tryAdvisoryLock`); SQLite: always granted (one process, whose single
/// writer serialises the purge with every other write).
public protocol PurgeLocking: StoreTransaction {
    /// Tries to take the purge lock until this transaction ends, without waiting.
    /// - Returns: false when another instance's purge holds it.
    /// - Throws: the engine's error.
    func tryPurgeLock() throws -> Bool
}

/// The tombstone purge (spec §5, "Tombstones"): deletes the tombstones of every collection that
/// has them, each served by its `…_tombstones` index, and raises the purge horizon to the
/// largest purged position. While another instance purges, this one skips the round and
/// reports the current horizon.
extension SyncRepository where Self: SQLStore, Transaction: PurgeLocking {
    public func purgeTombstones(deletedBefore: Int64) throws -> (purged: Int, horizon: Int64) {
        try transaction { tx in
            guard try tx.tryPurgeLock() else {
                return (0, try tx.queryOne(SyncFeedSQL.horizon, [])?[0].int64 ?? 0)
            }
            var purged: [Int64] = []
            for delete in [SyncPurgeSQL.waterEntries, SyncPurgeSQL.bills] {
                purged += try tx.query(delete, [.integer(deletedBefore)]).map { $0[0].int64 ?? 0 }
            }
            try tx.execute(SyncPurgeSQL.raiseHorizon, [.integer(purged.max() ?? 0)])
            return (purged.count, try tx.queryOne(SyncFeedSQL.horizon, [])?[0].int64 ?? 0)
        }
    }
}

enum SyncPurgeSQL {
    static let waterEntries = SQLText(
        "DELETE FROM water_entries WHERE deleted = 1 AND updated_at < ?1 RETURNING change_position")
    static let bills = SQLText("DELETE FROM bills WHERE deleted = 1 AND updated_at < ?1 RETURNING change_position")
    static let raiseHorizon = SQLText(
        "UPDATE sync_state SET purge_horizon = ?1 WHERE singleton = 1 AND purge_horizon < ?1")
}
