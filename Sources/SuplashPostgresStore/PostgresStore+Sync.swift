import SuplashDomain
import SuplashJSON
import SuplashPostgres
import SuplashSQL
import SuplashStoreRows

extension PostgresStore: WaterEntryBatchRepository {
    public func createEntries(
        userID: String, items: [(id: String, content: WaterEntryContent)], deviceID: String?,
        now: Int64
    ) throws -> [BatchItemOutcome] {
        let list = items.map { BatchItem(id: $0.id, content: $0.content) }
        return try write { tx in
            let c = tx.connection
            guard let profile = try PostgresStore.lockUser(c, userID: userID) else { throw RepositoryError.notFound }
            var outcomes: [BatchItemOutcome] = []
            outcomes.reserveCapacity(list.count)
            var touched: [EntryDelta] = []
            for item in list {
                if let stored = try PostgresStore.fetchEntry(c, userID: userID, id: item.id, lock: false) {
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
                        WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0
                        """, [.text(userID), .text(hk)]
                    ).first
                {
                    outcomes.append(.existing(StoreRows.entry(row)))
                    continue
                }
                let position = try self.changePosition(tx, userID: userID, row: ChangeRows.entry(userID, item.id))
                let content = item.content
                c.enqueue(
                    """
                    INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                        created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $10, $11, $12)
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
            try PostgresStore.entriesChanged(tx, userID: userID, profile: profile, deltas: touched, now: now)
            return outcomes
        }
    }
}

/// A `Sendable` pair for the batch write job.
private struct BatchItem: Sendable {
    let id: String
    let content: WaterEntryContent
}

extension PostgresConnection {
    /// The first column of the first row, or nil when there is no row.
    func scalar(_ sql: String, _ args: [SQLValue] = []) throws -> SQLValue? {
        try query(sql, args).first?[0]
    }

    /// The first column of the first row as an integer; nil when absent or NULL.
    func scalarInt64(_ sql: String, _ args: [SQLValue] = []) throws -> Int64? {
        try scalar(sql, args)?.int64
    }
}
