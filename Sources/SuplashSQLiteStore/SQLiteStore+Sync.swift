import SuplashDomain
import SuplashJSON
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: IdempotencyRepository {
    public func idempotencyRecord(caller: String, key: String, now: Int64) throws -> IdempotencyRecord? {
        try read { c in
            guard
                let row = try c.query(
                    """
                    SELECT fingerprint, status, headers, body, expires_at FROM idempotency_records
                    WHERE caller = ? AND idempotency_key = ? AND expires_at > ? AND status > 0
                    """, [.text(caller), .text(key), .integer(now)]
                ).first
            else { return nil }
            return Self.idempotencyRecord(row)
        }
    }

    static func idempotencyRecord(_ row: SQLiteRow) -> IdempotencyRecord {
        var headers: [[String]] = []
        if let text = row["headers"].text, case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) {
            for item in items {
                if case .array(let pair) = item, pair.count == 2, let n = pair[0].stringValue, let v = pair[1].stringValue {
                    headers.append([n, v])
                }
            }
        }
        return IdempotencyRecord(
            fingerprint: row["fingerprint"].bytes ?? [], status: Int(row["status"].int64 ?? 500),
            headers: headers, body: row["body"].bytes ?? [],
            expiresAt: row["expires_at"].int64 ?? 0)
    }

    public func saveIdempotencyRecord(caller: String, key: String, record: IdempotencyRecord, now: Int64) throws {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        try write { ctx in
            _ = try ctx.connection.run(
                """
                INSERT OR REPLACE INTO idempotency_records
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)),
                    .text(headers), .blob(record.body), .integer(now), .integer(record.expiresAt),
                ])
        }
    }

    public func purgeIdempotencyRecords(now: Int64) throws -> Int {
        try write { ctx in
            try ctx.connection.run("DELETE FROM idempotency_records WHERE expires_at <= ?", [.integer(now)])
        }
    }

    /// The row claim in one write transaction (SQLite's single writer makes the read and
    /// the insert atomic). The server does not use it on SQLite — `IdempotencyGuard` keeps
    /// running keys in memory there (one process) — but it behaves as PostgreSQL's.
    public func claimIdempotencyKey(
        caller: String, key: String, fingerprint: [UInt8], now: Int64,
        leaseUntil: Int64
    ) throws -> IdempotencyClaim {
        try write { ctx in
            let c = ctx.connection
            if let row = try c.query(
                """
                SELECT fingerprint, status, headers, body, expires_at FROM idempotency_records
                WHERE caller = ? AND idempotency_key = ? AND expires_at > ?
                """, [.text(caller), .text(key), .integer(now)]
            ).first {
                return (row["status"].int64 ?? 0) == 0 ? .running : .completed(Self.idempotencyRecord(row))
            }
            _ = try c.run(
                """
                INSERT OR REPLACE INTO idempotency_records
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES (?, ?, ?, 0, '[]', ?, ?, ?)
                """, [.text(caller), .text(key), .blob(fingerprint), .blob([]), .integer(now), .integer(leaseUntil)])
            return .claimed(token: now)
        }
    }

    public func completeIdempotencyKey(caller: String, key: String, token: Int64, record: IdempotencyRecord) throws {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        try write { ctx in
            _ = try ctx.connection.run(
                """
                INSERT INTO idempotency_records
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (caller, idempotency_key) DO UPDATE SET
                    fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
                    body = excluded.body, expires_at = excluded.expires_at
                WHERE idempotency_records.status = 0 AND idempotency_records.created_at = excluded.created_at
                """,
                [
                    .text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)),
                    .text(headers), .blob(record.body), .integer(token), .integer(record.expiresAt),
                ])
        }
    }

    public func abandonIdempotencyKey(caller: String, key: String, token: Int64) throws {
        try write { ctx in
            _ = try ctx.connection.run(
                """
                DELETE FROM idempotency_records
                WHERE caller = ? AND idempotency_key = ? AND status = 0 AND created_at = ?
                """, [.text(caller), .text(key), .integer(token)])
        }
    }
}

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
