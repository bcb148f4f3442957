import SuplashDomain
import SuplashJSON
import SuplashStorage
import SuplashStoreCore
import SuplashStoreRows

extension SQLiteStore: SyncRepository {
    public func applyMutations(
        userID: String, deviceID: String, now: Int64, mutations: [SyncMutation],
        profilePatch: @escaping @Sendable (JSONValue, UserProfile) throws -> UserProfile
    )
        throws -> (outcomes: [SyncMutationOutcome], headPosition: Int64)
    {
        try write { ctx in
            let c = ctx.connection
            if (try c.query("SELECT 1 FROM users WHERE id = ?", [.text(userID)])).isEmpty {
                throw RepositoryError.notFound
            }
            var outcomes: [SyncMutationOutcome] = []
            for m in mutations {
                switch m.collection {
                case "water_entries":
                    outcomes.append(try self.applyEntryMutation(ctx, userID: userID, deviceID: deviceID, now: now, m))
                case "profile":
                    outcomes.append(
                        try self.applyProfileMutation(
                            ctx, userID: userID, deviceID: deviceID, now: now, m,
                            profilePatch))
                case "bills":
                    outcomes.append(try self.applyBillMutation(ctx, userID: userID, deviceID: deviceID, now: now, m))
                case "days":
                    outcomes.append(try self.applyDayMutation(ctx, userID: userID, deviceID: deviceID, now: now, m))
                case "achievements":
                    outcomes.append(.rejected(SyncRejection(code: "read_only_collection")))
                default:
                    outcomes.append(.rejected(SyncRejection(code: "unknown_collection")))
                }
            }
            let head = try c.scalarInt64("SELECT position FROM change_sequence WHERE singleton = 1") ?? 0
            return (outcomes, head)
        }
    }

    private func applyEntryMutation(
        _ ctx: WriteContext, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation
    ) throws -> SyncMutationOutcome {
        let c = ctx.connection
        let stored = try SQLiteStore.fetchEntry(c, userID: userID, id: m.id)
        let step = SyncPush.entry(
            m, stored: stored, userID: userID, stamp: WriteStamp(at: m.clientUpdatedAt, device: deviceID),
            now: now)
        let position: Int64
        switch step {
        case .answer(let outcome):
            return outcome
        case .unchanged:
            // A retried push (spec §5): nothing is written, nothing is recomputed.
            let stored = try c.scalarInt64(
                "SELECT change_position FROM water_entries WHERE user_id = ? AND id = ?",
                [.text(userID), .text(m.id)])
            return SyncPush.applied(
                step, collection: "water_entries", id: m.id, position: stored ?? 0, now: now,
                wrap: SyncDocument.waterEntry)
        case .upsert(let entry):
            let content = entry.content
            if let hk = content.healthKitUUID,
                !(try c.query(
                    "SELECT 1 FROM water_entries WHERE user_id = ? AND health_kit_uuid = ? AND deleted = 0 AND id <> ?",
                    [.text(userID), .text(hk), .text(m.id)])).isEmpty
            {
                return .rejected(SyncRejection(code: "health_kit_uuid_exists"))
            }
            position = try takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13)
                ON CONFLICT (user_id, id) DO UPDATE SET amount_ml = ?3, logged_at = ?4, source = ?5,
                    health_kit_uuid = ?6, note = ?7, updated_at = ?9, version = ?10, deleted = 0,
                    change_position = ?11, lww_at = ?12, lww_device = ?13
                """,
                [
                    .text(userID), .text(m.id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(entry.createdAt), .integer(now), .integer(entry.version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        case .tombstone(let version):
            position = try takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES (?1, ?2, 0, 0, 'api', NULL, NULL, ?3, ?3, ?4, 1, ?5, ?6, ?7)
                ON CONFLICT (user_id, id) DO UPDATE SET updated_at = ?3, version = ?4, deleted = 1,
                    change_position = ?5, lww_at = ?6, lww_device = ?7
                """,
                [
                    .text(userID), .text(m.id), .integer(now), .integer(version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        }
        // Daily totals and achievements change in the same transaction (spec §4).
        try SQLiteStore.entriesChanged(c, userID: userID, deltas: SyncPush.entryDeltas(step, stored: stored), now: now)
        return SyncPush.applied(
            step, collection: "water_entries", id: m.id, position: position, now: now,
            wrap: SyncDocument.waterEntry)
    }

    private func applyProfileMutation(
        _ ctx: WriteContext, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation,
        _ profilePatch: @Sendable (JSONValue, UserProfile) throws -> UserProfile
    )
        throws -> SyncMutationOutcome
    {
        let c = ctx.connection
        let patch: JSONValue
        switch SyncPush.profileTarget(m, userID: userID) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let p): patch = p
        }
        guard
            let row = try c.query(
                "SELECT \(StoreRows.userColumns), lww_at, lww_device FROM users WHERE id = ?",
                [.text(userID)]
            ).first
        else {
            throw RepositoryError.notFound
        }
        let current = StoreRows.user(row).profile
        let step = try SyncPush.profile(
            patch: patch, stored: Stamped(current, stamp: StoreRows.stamp(row)),
            stamp: WriteStamp(at: m.clientUpdatedAt, device: deviceID), now: now,
            apply: profilePatch)
        guard case .upsert(let next) = step else {
            // An answer, or a retried push that changes nothing (spec §5): no write, no recompute.
            let stored = try c.scalarInt64("SELECT change_position FROM users WHERE id = ?", [.text(userID)])
            return SyncPush.applied(
                step, collection: "profile", id: userID, position: stored ?? 0, now: now,
                wrap: SyncDocument.profile)
        }
        let position = try takeChangePosition(ctx, userID: userID)
        _ = try c.run(
            """
            UPDATE users SET email = ?, email_verified = ?, display_name = ?, weight_kg = ?, activity_level = ?,
                wake_time = ?, sleep_time = ?, timezone = ?, locale = ?, daily_goal_ml = ?, cup_sizes_ml = ?,
                updated_at = ?, version = ?, change_position = ?, lww_at = ?, lww_device = ?
            WHERE id = ?
            """,
            StoreRows.profileValues(next) + [
                .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
                .text(userID),
            ])
        // A new time zone or goal re-buckets days and re-evaluates goals, as for REST writes.
        try SQLiteStore.profileChanged(c, previous: current, current: next, now: now)
        return SyncPush.applied(
            step, collection: "profile", id: userID, position: position, now: now,
            wrap: SyncDocument.profile)
    }

}

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
