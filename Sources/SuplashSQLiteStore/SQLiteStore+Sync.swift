import SuplashDomain
import SuplashJSON
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: WaterEntryBatchRepository {
    public func createEntries(
        userID: String, items: [(id: String, content: WaterEntryContent)], deviceID: String?,
        now: Int64
    ) throws -> [BatchItemOutcome] {
        let list = items.map { BatchItem(id: $0.id, content: $0.content) }
        return try write { ctx in
            let c = ctx.connection
            if (try c.query("SELECT 1 FROM users WHERE id = ?", [.text(userID)])).isEmpty {
                throw RepositoryError.notFound
            }
            var outcomes: [BatchItemOutcome] = []
            outcomes.reserveCapacity(list.count)
            var touched: [EntryDelta] = []
            for item in list {
                if let stored = try SQLiteStore.fetchEntry(c, userID: userID, id: item.id) {
                    do {
                        if let existing = try DocumentWrites.existing(
                            stored, content: item.content,
                            storedContent: \.content, deletedCode: "entry_deleted",
                            existsCode: "entry_exists")
                        {
                            outcomes.append(.existing(existing))
                        }
                    } catch RepositoryError.conflict(code: let code) {
                        outcomes.append(.rejected(code: code))
                    }
                    continue
                }
                if let hk = item.content.healthKitUUID,
                    let row = try c.query(
                        """
                        SELECT \(StoreRows.entryColumns) FROM water_entries
                        WHERE user_id = ? AND health_kit_uuid = ? AND deleted = 0
                        """, [.text(userID), .text(hk)]
                    ).first
                {
                    outcomes.append(.existing(StoreRows.entry(row)))
                    continue
                }
                let position = try self.takeChangePosition(ctx, userID: userID)
                let content = item.content
                _ = try c.run(
                    """
                    INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                        created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?)
                    """,
                    [
                        .text(userID), .text(item.id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                        .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                        .integer(now), .integer(now), .integer(position), .integer(now), .text(deviceID ?? ""),
                    ])
                outcomes.append(
                    .created(
                        WaterEntry(
                            id: item.id, userID: userID, content: content, createdAt: now,
                            updatedAt: now, version: 1, deleted: false)))
                touched.append(EntryDelta(content, sign: 1))
            }
            // Daily totals and achievements change in the same transaction, once per batch.
            try SQLiteStore.entriesChanged(c, userID: userID, deltas: touched, now: now)
            return outcomes
        }
    }
}

/// A `Sendable` pair for the batch write job.
private struct BatchItem: Sendable {
    let id: String
    let content: WaterEntryContent
}
