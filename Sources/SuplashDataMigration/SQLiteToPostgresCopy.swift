import Foundation
import SuplashPostgres
import SuplashSQL
import SuplashStorage

/// Copies a (possibly live) SQLite deployment into PostgreSQL: `suplash-server migrate-data`.
///
/// **Source snapshot.** The SQLite file is opened read-only and read inside one read
/// transaction, so every table comes from the same committed state even while a server keeps
/// writing (WAL readers do not block the writer; the WAL cannot be checkpointed past the
/// snapshot until the copy ends).
///
/// **Target.** All tables are written in one PostgreSQL transaction (READ COMMITTED, holding
/// the `change_sequence` row lock, so no PostgreSQL-backed server can take a position
/// meanwhile): the target shows either the previous copy or the new one. Each table is
/// walked in primary-key order in batches; every batch is upserted (`INSERT … ON CONFLICT
/// (pk) DO UPDATE … WHERE` the row differs — the source is the truth, unchanged rows are not
/// rewritten) and target rows inside the batch's key range that the source no longer has
/// (purged tombstones, erased accounts, expired idempotency records, used codes) are deleted.
/// A re-run therefore converges the target to the source: nothing is duplicated and only
/// what changed is written. If a unique index other than the primary key trips (an e-mail
/// address that moved from one account to another between runs), the transaction is rolled
/// back and redone as a full replace (every table emptied, then filled).
///
/// **Identity and positions.** `database_identity` (the `database_id` inside every sync
/// token) is copied, every row keeps its `change_position`, `sync_state.purge_horizon` is
/// copied, and `change_sequence.position` is set to the highest of the source's counter, the
/// highest copied position and the target's counter. So a sync token issued by the SQLite
/// server names the same database and a position the PostgreSQL server also has: clients
/// continue without a 410 and without missing a change.
///
/// **Refusals** (unless `force`): the target already holds data of a different database
/// (another `database_id` with users or positions), or the target's change counter is ahead
/// of the source's (a PostgreSQL server already took writes: copying again would undo them).
///
/// Table and column names come from a fixed list and the databases' catalogs; every value is
/// a bound parameter. Nothing here prints or returns row contents: the report holds table
/// names and counts only.
public enum SQLiteToPostgresCopy {
    /// A table copied row by row, in foreign-key order (parents first).
    struct Table {
        let name: String
        let primaryKey: [String]
        /// Whether the table has `change_position` (compared by the verification).
        let positioned: Bool
    }

    /// Every table that holds state, parents before children. `schema_migrations` is the
    /// migrator's own; the singletons (`database_identity`, `change_sequence`, `sync_state`)
    /// are handled separately.
    static let tables: [Table] = [
        Table(name: "users", primaryKey: ["id"], positioned: true),
        Table(name: "sessions", primaryKey: ["id"], positioned: false),
        Table(name: "refresh_tokens", primaryKey: ["token_hash"], positioned: false),
        Table(name: "admin_keys", primaryKey: ["name"], positioned: false),
        Table(name: "water_entries", primaryKey: ["user_id", "id"], positioned: true),
        Table(name: "days", primaryKey: ["user_id", "local_date"], positioned: true),
        Table(name: "daily_totals", primaryKey: ["user_id", "local_date"], positioned: false),
        Table(name: "bills", primaryKey: ["user_id", "id"], positioned: true),
        Table(name: "achievements", primaryKey: ["user_id"], positioned: true),
        Table(name: "erased_accounts", primaryKey: ["user_id"], positioned: false),
        Table(name: "email_codes", primaryKey: ["user_id", "purpose"], positioned: false),
        Table(name: "outbox", primaryKey: ["id"], positioned: false),
        Table(name: "apple_identities", primaryKey: ["sub"], positioned: false),
        Table(name: "apple_revoke_jobs", primaryKey: ["id"], positioned: false),
        Table(name: "apple_notifications", primaryKey: ["jti"], positioned: false),
        Table(name: "mail_holds", primaryKey: ["address"], positioned: false),
        Table(name: "devices", primaryKey: ["user_id", "id"], positioned: false),
        Table(name: "device_tokens", primaryKey: ["user_id", "device_id", "push_type"], positioned: false),
        Table(name: "push_outbox", primaryKey: ["id"], positioned: false),
        Table(name: "drinking_hours", primaryKey: ["user_id", "local_date", "hour"], positioned: false),
        Table(name: "entry_amounts", primaryKey: ["user_id", "amount_ml"], positioned: false),
        Table(name: "reminders", primaryKey: ["id"], positioned: false),
        Table(name: "campaigns", primaryKey: ["id"], positioned: false),
        Table(name: "idempotency_records", primaryKey: ["caller", "idempotency_key"], positioned: false),
    ]

    /// Tables the copy handles without copying rows one by one.
    static let specialTables: Set<String> = ["database_identity", "change_sequence", "sync_state"]

    /// Tables deliberately not copied: the migrator's own (each side records its own
    /// migrations), state that is rebuilt by itself (rate-limit buckets refill; a missing
    /// bucket is a full one) and `server_secrets`, which SQLite deployments never fill (their
    /// secret is the data dir's `jwt-secret` file; `migrate-data` seeds it separately). Any other table the copy does not know refuses the run, so a
    /// migration that adds state cannot be skipped silently: add it to `tables` or here.
    static let notCopiedTables: Set<String> = ["schema_migrations", "rate_limit_buckets", "server_secrets"]

    /// Per-table outcome of a run.
    public struct TableReport: Sendable, Equatable {
        /// The table name.
        public var table: String
        /// Rows in the source snapshot.
        public var sourceRows: Int
        /// Rows in the target after the copy (read back in a fresh snapshot).
        public var targetRows: Int
        /// Rows inserted or changed in the target by this run.
        public var written: Int
        /// Target rows deleted because the source no longer has them.
        public var deleted: Int
        /// Highest `change_position` in the source (nil for tables without one or when empty).
        public var sourceMaxPosition: Int64?
        /// Highest `change_position` in the target after the copy.
        public var targetMaxPosition: Int64?

        /// Counts and highest positions agree.
        public var matches: Bool { sourceRows == targetRows && sourceMaxPosition == targetMaxPosition }
    }

    /// What a run did and what the verification found.
    public struct Report: Sendable {
        /// The database id now shared by source and target.
        public var databaseID: String
        /// Highest applied migration version of the source (equal to the target's).
        public var schemaVersion: Int
        /// One entry per copied table, in copy order.
        public var tables: [TableReport]
        /// The source's change counter (`change_sequence.position`) in the snapshot.
        public var sourceSequence: Int64
        /// The target's change counter after the copy (≥ every copied position).
        public var targetSequence: Int64
        /// The source's purge horizon (`sync_state.purge_horizon`) in the snapshot.
        public var sourceHorizon: Int64
        /// The target's purge horizon after the copy.
        public var targetHorizon: Int64
        /// The target's database id read back after the copy.
        public var targetDatabaseID: String
        /// True when the incremental upsert hit a secondary unique index and the copy was
        /// redone as a full replace.
        public var replacedAll: Bool
        /// Source tables deliberately not copied (`schema_migrations`, rate-limit buckets).
        public var skippedTables: [String]

        /// Every table matches, the identity and horizon were carried over, and the target's
        /// counter is not behind any copied position.
        public var verified: Bool {
            tables.allSatisfy(\.matches) && databaseID == targetDatabaseID && sourceHorizon == targetHorizon
                && targetSequence >= sourceSequence
                && tables.allSatisfy { ($0.targetMaxPosition ?? 0) <= targetSequence }
        }
    }

    /// Why a run refused or failed. `description` names tables, columns and versions only.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// The target holds data of another database (`database_id` differs).
        case differentDatabase
        /// The target's change counter is ahead of the source's: a server wrote to it.
        case targetAhead(source: Int64, target: Int64)
        /// Source and target schemas are at different migration versions.
        case schemaVersionMismatch(source: Int, target: Int)
        /// A source column the target table does not have, a source table this copy does not
        /// know, or a name that is not a plain identifier.
        case schemaMismatch(String)
        /// The source file is missing or not a Suplash database.
        case source(String)

        /// A message for the operator; never contains row data.
        public var description: String {
            switch self {
            case .differentDatabase:
                return "the PostgreSQL database already holds data of a different Suplash database (database_id differs); "
                    + "use an empty database, or --force to overwrite it"
            case .targetAhead(let source, let target):
                return "the PostgreSQL database is ahead of the source (change position \(target) > \(source)): "
                    + "a server has written to it since the last copy, and copying again would undo those writes; "
                    + "use --force to overwrite anyway"
            case .schemaVersionMismatch(let source, let target):
                return "schema versions differ (SQLite at \(source), PostgreSQL at \(target)); "
                    + "run `suplash-server migrate` on the SQLite deployment with this build first"
            case .schemaMismatch(let detail):
                return "schemas differ: \(detail)"
            case .source(let detail):
                return detail
            }
        }
    }

    /// Copies `sqlitePath` into `target` (already migrated to `targetSchemaVersion` by the
    /// caller) and verifies the result.
    /// - Parameters:
    ///   - sqlitePath: the SQLite database file.
    ///   - target: the PostgreSQL database, migrated.
    ///   - force: overwrite a target that holds another database or is ahead of the source.
    ///   - batchSize: rows per upsert statement (parameters per statement stay < 65,535).
    /// - Throws: `Failure`, `StorageError` (source), `PostgresError` (target).
    public static func run(
        sqlitePath: String, target: PostgresDatabase, force: Bool = false,
        batchSize: Int = 500
    ) throws -> Report {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw Failure.source("no SQLite database at the given path")
        }
        let source = try SQLiteConnection(path: sqlitePath, role: .reader)
        defer { source.close() }
        try source.execute("BEGIN")
        defer { try? source.execute("COMMIT") }

        // The snapshot starts with this first read.
        guard let identity = try source.queryOne("SELECT database_id, created_at FROM database_identity WHERE singleton = 1"),
            let sourceVersion = try source.scalarInt64("SELECT max(version) FROM schema_migrations")
        else {
            throw Failure.source("the SQLite file is not a migrated Suplash database")
        }
        let databaseID = try identity.string(0)
        let createdAt = try identity.int64(1)
        let sourceSequence = try source.scalarInt64("SELECT position FROM change_sequence WHERE singleton = 1") ?? 0
        let sourceHorizon = try source.scalarInt64("SELECT purge_horizon FROM sync_state WHERE singleton = 1") ?? 0
        let sourceTables = try source.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .map { try $0.string(0) }
        let copied = Set(tables.map(\.name)).union(specialTables)
        let unknown = sourceTables.filter { !copied.contains($0) && !notCopiedTables.contains($0) }
        guard unknown.isEmpty else {
            throw Failure.schemaMismatch(
                "the SQLite database has tables migrate-data does not know (\(unknown.joined(separator: ", "))); "
                    + "this build cannot copy them")
        }
        let skipped = sourceTables.filter { notCopiedTables.contains($0) }

        let targetVersion = try PostgresMigrator.applied(target).last?.version ?? 0
        guard targetVersion == Int(sourceVersion) else {
            throw Failure.schemaVersionMismatch(source: Int(sourceVersion), target: targetVersion)
        }

        // Columns: the source's, each of which the target must have.
        var columns: [String: [String]] = [:]
        for table in tables {
            let names = try source.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table.name)])
                .map { try $0.string(0) }
            guard !names.isEmpty else { throw Failure.schemaMismatch("the SQLite database has no table \(table.name)") }
            let targetNames = Set(
                try target.read { c in
                    try c.query(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                        [.text(table.name)]
                    ).map { row -> String in
                        guard case .text(let name) = row[0] else { return "" }
                        return name
                    }
                })
            for name in names + table.primaryKey + [table.name] where !isIdentifier(name) {
                throw Failure.schemaMismatch("\(table.name) has a column name that is not a plain identifier")
            }
            for name in names where !targetNames.contains(name) {
                throw Failure.schemaMismatch("PostgreSQL table \(table.name) has no column \(name)")
            }
            for key in table.primaryKey where !names.contains(key) {
                throw Failure.schemaMismatch("SQLite table \(table.name) has no column \(key)")
            }
            columns[table.name] = names
        }

        var sourceCounts: [String: (Int, Int64?)] = [:]
        var maxCopiedPosition: Int64 = 0
        for table in tables {
            let count = Int(try source.scalarInt64("SELECT count(*) FROM \(quoted(table.name))") ?? 0)
            var maxPosition: Int64?
            if table.positioned {
                maxPosition = try source.scalarInt64("SELECT max(change_position) FROM \(quoted(table.name))")
                maxCopiedPosition = max(maxCopiedPosition, maxPosition ?? 0)
            }
            sourceCounts[table.name] = (count, maxPosition)
        }

        func copyAll(replaceAll: Bool) throws -> [String: (written: Int, deleted: Int)] {
            try target.transaction(isolation: .readCommitted, attempts: 1) { tx in
                let c = tx.connection
                // Holding the counter's row lock keeps PostgreSQL-backed writers (and a second
                // migrate-data) out until this transaction ends.
                guard let sequenceRow = try c.query("SELECT position FROM change_sequence WHERE singleton = 1 FOR UPDATE").first,
                    case .integer(let targetSequence) = sequenceRow[0],
                    let identityRow = try c.query("SELECT database_id FROM database_identity WHERE singleton = 1").first,
                    case .text(let targetID) = identityRow[0]
                else {
                    throw Failure.schemaMismatch("the PostgreSQL database has no change_sequence or database_identity row")
                }
                if !force {
                    let hasUsers = !(try c.query("SELECT 1 FROM users LIMIT 1")).isEmpty
                    if targetID != databaseID && (hasUsers || targetSequence > 0) { throw Failure.differentDatabase }
                    if targetID == databaseID && targetSequence > sourceSequence {
                        throw Failure.targetAhead(source: sourceSequence, target: targetSequence)
                    }
                }
                if replaceAll {
                    for table in tables.reversed() { try c.update("DELETE FROM \(quoted(table.name))") }
                }
                var outcome: [String: (written: Int, deleted: Int)] = [:]
                for table in tables {
                    outcome[table.name] = try copy(
                        table, columns: columns[table.name] ?? [], from: source, to: c,
                        batchSize: max(1, min(batchSize, 60_000 / max(1, columns[table.name]?.count ?? 1))))
                }
                try c.update(
                    "UPDATE database_identity SET database_id = $1, created_at = $2 WHERE singleton = 1",
                    [.text(databaseID), .integer(createdAt)])
                try c.update("UPDATE sync_state SET purge_horizon = $1 WHERE singleton = 1", [.integer(sourceHorizon)])
                try c.update(
                    "UPDATE change_sequence SET position = $1 WHERE singleton = 1",
                    [.integer(max(sourceSequence, maxCopiedPosition, targetSequence))])
                return outcome
            }
        }

        var replacedAll = false
        let outcome: [String: (written: Int, deleted: Int)]
        do {
            outcome = try copyAll(replaceAll: false)
        } catch let error as PostgresError where error.kind == .uniqueViolation {
            replacedAll = true
            outcome = try copyAll(replaceAll: true)
        }

        // Verification: a fresh snapshot of the target against the source snapshot.
        return try target.transaction(isolation: .repeatableRead, readOnly: true) { tx in
            let c = tx.connection
            var reports: [TableReport] = []
            for table in tables {
                let targetRows = Int(try int64(c.query("SELECT count(*) FROM \(quoted(table.name))").first?[0]) ?? 0)
                var targetMax: Int64?
                if table.positioned {
                    targetMax = try int64(c.query("SELECT max(change_position) FROM \(quoted(table.name))").first?[0])
                }
                let (sourceRows, sourceMax) = sourceCounts[table.name] ?? (0, nil)
                reports.append(
                    TableReport(
                        table: table.name, sourceRows: sourceRows, targetRows: targetRows,
                        written: outcome[table.name]?.written ?? 0, deleted: outcome[table.name]?.deleted ?? 0,
                        sourceMaxPosition: sourceMax, targetMaxPosition: targetMax))
            }
            let targetSequence = try int64(c.query("SELECT position FROM change_sequence WHERE singleton = 1").first?[0]) ?? -1
            let targetHorizon = try int64(c.query("SELECT purge_horizon FROM sync_state WHERE singleton = 1").first?[0]) ?? -1
            var targetID = ""
            if case .text(let id) = try c.query("SELECT database_id FROM database_identity WHERE singleton = 1").first?[0] ?? .null {
                targetID = id
            }
            return Report(
                databaseID: databaseID, schemaVersion: Int(sourceVersion), tables: reports,
                sourceSequence: sourceSequence, targetSequence: targetSequence,
                sourceHorizon: sourceHorizon, targetHorizon: targetHorizon, targetDatabaseID: targetID,
                replacedAll: replacedAll, skippedTables: skipped)
        }
    }

    /// Copies one table in primary-key order; returns rows written and rows deleted.
    ///
    /// Three walks over the source: the target rows the source no longer has are deleted, then
    /// the rows the target has are updated, then the new rows inserted. A row that took over
    /// another's place in a unique index other than the primary key (the next pending reminder
    /// or push of a user or device, after the previous one was sent, cancelled or purged) then
    /// finds that place free whatever the order of their keys, instead of tripping the index and
    /// turning the run into a full replace.
    static func copy(
        _ table: Table, columns: [String], from source: SQLiteConnection, to c: PostgresConnection,
        batchSize: Int
    ) throws -> (written: Int, deleted: Int) {
        var written = 0
        var deleted = 0
        for step in [CopyStep.delete, .update, .insert] {
            let done = try walk(table, columns: columns, from: source, to: c, batchSize: batchSize, step: step)
            written += done.written
            deleted += done.deleted
        }
        return (written, deleted)
    }

    /// One walk of `copy`.
    private enum CopyStep {
        /// Deletes the target rows missing from the source.
        case delete
        /// Upserts the batch's rows whose keys the target has.
        case update
        /// Upserts the rest.
        case insert
    }

    private static func walk(
        _ table: Table, columns: [String], from source: SQLiteConnection, to c: PostgresConnection,
        batchSize: Int, step: CopyStep
    ) throws -> (written: Int, deleted: Int) {
        let pk = table.primaryKey
        let pkIndexes = pk.compactMap { columns.firstIndex(of: $0) }
        let columnList = columns.map(quoted).joined(separator: ", ")
        let pkList = pk.map(quoted).joined(separator: ", ")
        let order = pk.map { "\(quoted($0)) ASC" }.joined(separator: ", ")
        let name = quoted(table.name)
        let firstPage = "SELECT \(columnList) FROM \(name) ORDER BY \(order) LIMIT ?"
        let nextPage =
            "SELECT \(columnList) FROM \(name) WHERE (\(pkList)) > (\(pk.map { _ in "?" }.joined(separator: ", "))) ORDER BY \(order) LIMIT ?"
        let nonKey = columns.filter { !pk.contains($0) }
        let update: String
        if nonKey.isEmpty {
            update = "DO NOTHING"
        } else {
            let targetCols = nonKey.map { "\(name).\(quoted($0))" }.joined(separator: ", ")
            let excludedCols = nonKey.map { "EXCLUDED.\(quoted($0))" }.joined(separator: ", ")
            update =
                "DO UPDATE SET " + nonKey.map { "\(quoted($0)) = EXCLUDED.\(quoted($0))" }.joined(separator: ", ")
                + " WHERE (\(targetCols)) IS DISTINCT FROM (\(excludedCols))"
        }

        func upsert(_ rows: [SQLiteRow]) throws -> Int {
            var args: [SQLValue] = []
            args.reserveCapacity(rows.count * columns.count)
            var tuples: [String] = []
            for row in rows {
                let start = args.count
                tuples.append("(" + columns.indices.map { "$\(start + $0 + 1)" }.joined(separator: ", ") + ")")
                args.append(contentsOf: row.values)
            }
            return try c.update(
                "INSERT INTO \(name) (\(columnList)) VALUES \(tuples.joined(separator: ", ")) "
                    + "ON CONFLICT (\(pkList)) \(update)", args)
        }

        var written = 0
        var deleted = 0
        var lastKey: [SQLValue]?
        while true {
            let rows: [SQLiteRow]
            if let lastKey {
                rows = try source.query(nextPage, lastKey + [.integer(Int64(batchSize))])
            } else {
                rows = try source.query(firstPage, [.integer(Int64(batchSize))])
            }
            guard !rows.isEmpty else { break }

            let keys = rows.map { row in pkIndexes.map { row.values[$0] } }
            defer { lastKey = keys.last }
            if step != .delete, let first = keys.first, let last = keys.last {
                let marks = (0..<(2 * pk.count)).map { "$\($0 + 1)" }
                let present = Set(
                    try c.query(
                        "SELECT \(pkList) FROM \(name) WHERE (\(pkList)) >= (\(marks[..<pk.count].joined(separator: ", "))) "
                            + "AND (\(pkList)) <= (\(marks[pk.count...].joined(separator: ", ")))", first + last
                    ).map { row in pk.indices.map { row[$0] } })
                let chosen = zip(rows, keys).filter { present.contains($0.1) == (step == .update) }.map(\.0)
                if !chosen.isEmpty { written += try upsert(chosen) }
                if rows.count < batchSize { break }
                continue
            }

            // Delete target rows in (lastKey, batchLast] that the source does not have.
            var deleteArgs: [SQLValue] = []

            func placeholders(_ values: [SQLValue]) -> String {
                let start = deleteArgs.count
                deleteArgs.append(contentsOf: values)
                return "(" + values.indices.map { "$\(start + $0 + 1)" }.joined(separator: ", ") + ")"
            }
            var conditions: [String] = []
            if let lastKey { conditions.append("(\(pkList)) > \(placeholders(lastKey))") }
            if let batchLast = keys.last { conditions.append("(\(pkList)) <= \(placeholders(batchLast))") }
            let keyTuples = keys.map(placeholders).joined(separator: ", ")
            conditions.append("(\(pkList)) NOT IN (\(keyTuples))")
            deleted += try c.update("DELETE FROM \(name) WHERE " + conditions.joined(separator: " AND "), deleteArgs)
            if rows.count < batchSize { break }
        }
        if step != .delete { return (written, 0) }
        // Everything after the source's last key is gone from the source.
        if let lastKey {
            let marks = lastKey.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            deleted += try c.update("DELETE FROM \(name) WHERE (\(pkList)) > (\(marks))", lastKey)
        } else {
            deleted += try c.update("DELETE FROM \(name)")
        }
        return (written, deleted)
    }

    /// `"name"`; names are checked with `isIdentifier` before they get here.
    static func quoted(_ name: String) -> String { "\"\(name)\"" }

    /// A lower-case SQL identifier (letters, digits, underscore; not starting with a digit).
    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first != "_" || name.count > 1 else { return false }
        return !("0"..."9").contains(first)
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
    }

    static func int64(_ value: SQLValue?) -> Int64? {
        if case .integer(let v) = value ?? .null { return v }
        return nil
    }
}
