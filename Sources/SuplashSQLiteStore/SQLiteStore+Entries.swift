import SuplashDomain
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: WaterEntryRepository {
    /// Reads one entry row (live or tombstone) with its last-write-wins stamp.
    static func fetchEntry(_ c: SQLiteConnection, userID: String, id: String) throws -> Stamped<WaterEntry>? {
        guard
            let row = try c.query(
                "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = ? AND id = ?",
                [.text(userID), .text(id)]
            ).first
        else { return nil }
        let entry = StoreRows.entry(row)
        return Stamped(entry, deleted: entry.deleted, stamp: StoreRows.stamp(row))
    }

    public func createEntry(
        userID: String, id: String, content: WaterEntryContent, deviceID: String?,
        now: Int64
    ) throws -> EntryCreateOutcome {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchEntry(c, userID: userID, id: id)
            if let existing = try DocumentWrites.existing(
                stored, content: content, storedContent: \.content,
                deletedCode: "entry_deleted", existsCode: "entry_exists")
            {
                return .existing(existing)
            }
            if let hk = content.healthKitUUID,
                let row = try c.query(
                    """
                    SELECT \(StoreRows.entryColumns) FROM water_entries
                    WHERE user_id = ? AND health_kit_uuid = ? AND deleted = 0
                    """, [.text(userID), .text(hk)]
                ).first
            {
                return .existing(StoreRows.entry(row))
            }
            if (try c.query("SELECT 1 FROM users WHERE id = ?", [.text(userID)])).isEmpty {
                throw RepositoryError.notFound
            }
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?)
                """,
                [
                    .text(userID), .text(id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(now), .integer(now), .integer(position), .integer(now), .text(deviceID ?? ""),
                ])
            try SQLiteStore.entriesChanged(c, userID: userID, deltas: [.init(content, sign: 1)], now: now)
            return .created(
                WaterEntry(
                    id: id, userID: userID, content: content, createdAt: now, updatedAt: now,
                    version: 1, deleted: false))
        }
    }

    public func entry(userID: String, id: String) throws -> WaterEntry? {
        try read { c in
            try c.query(
                "SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = ? AND id = ? AND deleted = 0",
                [.text(userID), .text(id)]
            ).first.map(StoreRows.entry)
        }
    }

    public func updateEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool,
        _ transform: @escaping @Sendable (WaterEntryContent) throws -> WaterEntryContent
    ) throws -> WaterEntry {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchEntry(c, userID: userID, id: id)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            if let hk = content.healthKitUUID, hk != current.content.healthKitUUID,
                !(try c.query(
                    "SELECT 1 FROM water_entries WHERE user_id = ? AND health_kit_uuid = ? AND deleted = 0",
                    [.text(userID), .text(hk)])).isEmpty
            {
                throw RepositoryError.conflict(code: "health_kit_uuid_exists")
            }
            let next = DocumentWrites.revised(current, content: content, now: now)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                UPDATE water_entries SET amount_ml = ?, logged_at = ?, source = ?, health_kit_uuid = ?, note = ?,
                    updated_at = ?, version = ?, change_position = ?, lww_at = ?, lww_device = ?
                WHERE user_id = ? AND id = ?
                """,
                [
                    .integer(Int64(content.amountMl)), .integer(content.loggedAt), .text(content.source.rawValue),
                    .optionalText(content.healthKitUUID), .optionalText(content.note), .integer(now), .integer(next.version),
                    .integer(position), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            try SQLiteStore.entriesChanged(
                c, userID: userID,
                deltas: [.init(current.content, sign: -1), .init(content, sign: 1)], now: now)
            return next
        }
    }

    public func deleteEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool
    ) throws {
        try write { ctx in
            let c = ctx.connection
            let stored = try SQLiteStore.fetchEntry(c, userID: userID, id: id)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                UPDATE water_entries SET deleted = 1, updated_at = ?, version = version + 1, change_position = ?,
                    lww_at = ?, lww_device = ?
                WHERE user_id = ? AND id = ?
                """,
                [
                    .integer(now), .integer(position), .integer(stamp.at), .text(stamp.device),
                    .text(userID), .text(id),
                ])
            try SQLiteStore.entriesChanged(c, userID: userID, deltas: [.init(current.content, sign: -1)], now: now)
        }
    }

    /// The SQL of the list query; public to the tests, which check with
    /// `EXPLAIN QUERY PLAN` that it is served by the `water_entries_list` index.
    public static let listEntriesSQL = """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2 AND logged_at < ?3
          AND logged_at <= ?4 AND (logged_at < ?4 OR id < ?5)
        ORDER BY logged_at DESC, id DESC
        LIMIT ?6
        """

    public func listEntries(userID: String, from: Int64?, to: Int64?, after cursor: EntryCursor?, limit: Int) throws -> [WaterEntry] {
        try read { c in
            let upper = cursor?.loggedAt ?? Int64.max
            let upperID = cursor?.id ?? "\u{10FFFF}"
            return try c.query(
                SQLiteStore.listEntriesSQL,
                [
                    .text(userID), .integer(from ?? Int64.min), .integer(to ?? Int64.max), .integer(upper),
                    .text(upperID), .integer(Int64(limit)),
                ]
            ).map(StoreRows.entry)
        }
    }
}
