import SuplashLogging
import SuplashSQLiteStore
import SuplashStorage

/// Start-up check of the WAL position file (SQLite only; docs/operations.md "The WAL
/// position file"): refuses to serve a database that is behind the last change position
/// acknowledged to clients, then has every later group commit record its position.
enum WALPositionCheck {
    /// - Throws: `StartupRefusal` (exit 65, damaged data) with `AcknowledgedPositionBehind`'s
    ///   explanation (what happened, what to do) when the database lost acknowledged commits;
    ///   `StorageError` when the side file cannot be written.
    static func run(_ backend: StorageBackend, logger: Logger) throws {
        guard case .sqlite(let database) = backend else { return }
        let outcome: AcknowledgedPositionCheck
        do {
            outcome = try database.trackAcknowledgedPosition(
                positionSQL: SQLiteStore.changePositionSQL,
                identitySQL: SQLiteStore.databaseIdentitySQL,
                forkIdentitySQL: SQLiteStore.forkDatabaseIdentitySQL)
        } catch let behind as AcknowledgedPositionBehind {
            logger.error(
                "wal_position_behind", .count("databasePosition", Int(behind.databasePosition)),
                .count("acknowledgedPosition", Int(behind.acknowledgedPosition)))
            throw StartupRefusal(description: behind.description, exitCode: ExitCode.dataError)
        }
        switch outcome {
        case .created: logger.info("wal_position_file_created")
        case .rewrittenUnreadable: logger.warning("wal_position_file_unreadable")
        case .rewrittenOtherDatabase: logger.info("wal_position_file_other_database")
        case .forked: logger.warning("wal_position_file_missing_database_id_forked")
        case .consistent: break
        }
    }
}
