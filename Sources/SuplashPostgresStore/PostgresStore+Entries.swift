import SuplashDomain
import SuplashPostgres
import SuplashStorage
import SuplashStoreRows

/// Water entries; every write recomputes the touched days' totals and the achievements in
/// its own transaction (`entriesChanged`), as on SQLite.
extension PostgresStore: WaterEntryRepository {
    /// Reads one entry row (live or tombstone) with its last-write-wins stamp; `lock` takes
    /// its row lock for a read-modify-write.
    static func fetchEntry(_ c: PostgresConnection, userID: String, id: String, lock: Bool) throws -> Stamped<WaterEntry>? {
        let sql = lock
            ? "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = $1 AND id = $2 FOR UPDATE"
            : "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = $1 AND id = $2"
        guard let row = try c.query(sql, [.text(userID), .text(id)]).first else { return nil }
        let entry = StoreRows.entry(row)
        return Stamped(entry, deleted: entry.deleted, stamp: StoreRows.stamp(row))
    }

    /// Check, then insert: when a concurrent writer inserts the same id or HealthKit sample
    /// first, the insert hits the primary key or `water_entries_health_kit` and the whole
    /// transaction is re-run (`PostgresStore.write`), which then answers `.existing` or a
    /// conflict from the committed row — as on SQLite.
    public func createEntry(userID: String, id: String, content: WaterEntryContent, deviceID: String?,
                            now: Int64) throws -> EntryCreateOutcome {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.fetchEntry(c, userID: userID, id: id, lock: false)
            if let existing = try DocumentWrites.existing(stored, content: content, storedContent: \.content,
                                                          deletedCode: "entry_deleted", existsCode: "entry_exists") {
                return .existing(existing)
            }
            if let hk = content.healthKitUUID,
               let row = try c.query("""
                   SELECT \(StoreRows.entryColumns) FROM water_entries
                   WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0
                   """, [.text(userID), .text(hk)]).first {
                return .existing(StoreRows.entry(row))
            }
            if (try c.query("SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE", [.text(userID)])).isEmpty {
                throw RepositoryError.notFound
            }
            let position = try self.takeChangePosition(tx, userID: userID)
            try c.update("""
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $10, $11, $12)
                """, [
                    .text(userID), .text(id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(now), .integer(now), .integer(position), .integer(now), .text(deviceID ?? ""),
                ])
            try PostgresStore.entriesChanged(tx, userID: userID, deltas: [EntryDelta(content, sign: 1)], now: now)
            return .created(WaterEntry(id: id, userID: userID, content: content, createdAt: now, updatedAt: now,
                                       version: 1, deleted: false))
        }
    }

    public func entry(userID: String, id: String) throws -> WaterEntry? {
        try read { c in
            try c.query("SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = $1 AND id = $2 AND deleted = 0",
                        [.text(userID), .text(id)]).first.map(StoreRows.entry)
        }
    }

    public func updateEntry(userID: String, id: String, deviceID: String?, now: Int64,
                            precondition: @escaping @Sendable (WaterEntry) -> Bool,
                            _ transform: @escaping @Sendable (WaterEntryContent) throws -> WaterEntryContent) throws -> WaterEntry {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.fetchEntry(c, userID: userID, id: id, lock: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            if let hk = content.healthKitUUID, hk != current.content.healthKitUUID,
               !(try c.query("SELECT 1 FROM water_entries WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0",
                             [.text(userID), .text(hk)])).isEmpty {
                throw RepositoryError.conflict(code: "health_kit_uuid_exists")
            }
            let next = DocumentWrites.revised(current, content: content, now: now)
            let position = try self.takeChangePosition(tx, userID: userID)
            try c.update("""
                UPDATE water_entries SET amount_ml = $1, logged_at = $2, source = $3, health_kit_uuid = $4, note = $5,
                    updated_at = $6, version = $7, change_position = $8, lww_at = $9, lww_device = $10
                WHERE user_id = $11 AND id = $12
                """, [
                    .integer(Int64(content.amountMl)), .integer(content.loggedAt), .text(content.source.rawValue),
                    .optionalText(content.healthKitUUID), .optionalText(content.note), .integer(now), .integer(next.version),
                    .integer(position), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            try PostgresStore.entriesChanged(tx, userID: userID,
                                             deltas: [EntryDelta(current.content, sign: -1), EntryDelta(content, sign: 1)],
                                             now: now)
            return next
        }
    }

    public func deleteEntry(userID: String, id: String, deviceID: String?, now: Int64,
                            precondition: @escaping @Sendable (WaterEntry) -> Bool) throws {
        try write { tx in
            let c = tx.connection
            let stored = try PostgresStore.fetchEntry(c, userID: userID, id: id, lock: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let position = try self.takeChangePosition(tx, userID: userID)
            try c.update("""
                UPDATE water_entries SET deleted = 1, updated_at = $1, version = version + 1, change_position = $2,
                    lww_at = $3, lww_device = $4
                WHERE user_id = $5 AND id = $6
                """, [.integer(now), .integer(position), .integer(stamp.at), .text(stamp.device),
                      .text(userID), .text(id)])
            try PostgresStore.entriesChanged(tx, userID: userID, deltas: [EntryDelta(current.content, sign: -1)], now: now)
        }
    }

    /// The SQL of the list query (keyset, served by `water_entries_list`).
    public static let listEntriesSQL = """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = $1 AND deleted = 0 AND logged_at >= $2 AND logged_at < $3
          AND logged_at <= $4 AND (logged_at < $4 OR id < $5)
        ORDER BY logged_at DESC, id DESC
        LIMIT $6
        """

    public func listEntries(userID: String, from: Int64?, to: Int64?, after cursor: EntryCursor?, limit: Int) throws -> [WaterEntry] {
        try read { c in
            try c.query(PostgresStore.listEntriesSQL, [
                .text(userID), .integer(from ?? Int64.min), .integer(to ?? Int64.max), .integer(cursor?.loggedAt ?? Int64.max),
                .text(cursor?.id ?? "\u{10FFFF}"), .integer(Int64(limit)),
            ]).map(StoreRows.entry)
        }
    }
}
