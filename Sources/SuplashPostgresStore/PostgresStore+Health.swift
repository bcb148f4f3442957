import SuplashDomain
import SuplashPostgres

extension PostgresStore: StorageWriteProbe {
    /// The write probe on PostgreSQL (docs/operations.md "Write probe"): one transaction
    /// that rewrites the `database_identity` row with its own values and commits. The
    /// `UPDATE` fails with 25006 on a standby or with `default_transaction_read_only`, with
    /// XX001 on a damaged page; the commit needs a WAL flush (a full WAL disk fails it, a
    /// crashed or restarting server answers 57P0x or class 08). One small heap-only tuple
    /// update per probe: pruned on the page, the table does not grow.
    /// - Throws: `RepositoryError.storage` (recorded in `health` by the caller), or
    ///   `.unavailable` for an unclassified failure.
    public func probeWrite() throws {
        _ = try write { tx in
            try tx.connection.query("UPDATE database_identity SET created_at = created_at WHERE singleton = 1")
        }
    }
}
