import SuplashDomain
import SuplashJSON
import SuplashPostgres
import SuplashSQL
import SuplashStoreCore
import SuplashStoreRows

extension PostgresStore: SyncRepository {
    public func applyMutations(
        userID: String, deviceID: String, now: Int64, mutations: [SyncMutation],
        profilePatch: @escaping @Sendable (JSONValue, UserProfile) throws -> UserProfile
    )
        throws -> (outcomes: [SyncMutationOutcome], headPosition: Int64)
    {
        let (outcomes, readHead, tx) = try write { tx -> ([SyncMutationOutcome], Int64, PostgresTransaction) in
            let c = tx.connection
            // The user's row lock first: every other writer of this user's documents (REST
            // writes, other pushes, email verification, Apple takeover) takes it too, so the
            // last-write-wins decisions below read rows no concurrent writer, on any
            // instance, can change before this commits — the serialised writer SQLite has.
            // The positions are taken at the commit like every write's (docs/postgresql.md, "Change
            // sequence"); the answers carry provisional ones until then. Later mutations
            // re-read what earlier ones wrote (achievements), so writes are not deferred.
            tx.defersWrites = false
            if (try c.query("SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE", [.text(userID)])).isEmpty {
                throw RepositoryError.notFound
            }
            var outcomes: [SyncMutationOutcome] = []
            for m in mutations {
                switch m.collection {
                case "water_entries":
                    outcomes.append(try self.applyEntryMutation(tx, userID: userID, deviceID: deviceID, now: now, m))
                case "profile":
                    outcomes.append(
                        try self.applyProfileMutation(
                            tx, userID: userID, deviceID: deviceID, now: now, m,
                            profilePatch))
                case "bills":
                    outcomes.append(try self.applyBillMutation(tx, userID: userID, deviceID: deviceID, now: now, m))
                case "days":
                    outcomes.append(try self.applyDayMutation(tx, userID: userID, deviceID: deviceID, now: now, m))
                case "achievements":
                    outcomes.append(.rejected(SyncRejection(code: "read_only_collection")))
                default:
                    outcomes.append(.rejected(SyncRejection(code: "unknown_collection")))
                }
            }
            let head = try c.scalarInt64("SELECT position FROM change_sequence WHERE singleton = 1") ?? 0
            return (outcomes, head, tx)
        }
        // Committed: the provisional positions in the answers become the numbers taken.
        let final = outcomes.map { outcome -> SyncMutationOutcome in
            guard case .applied(var change) = outcome, PostgresTransaction.isProvisional(change.position) else { return outcome }
            change.position = tx.finalPosition(change.position)
            return .applied(change)
        }
        return (final, max(readHead, tx.positions.max() ?? readHead))
    }

    private func applyEntryMutation(
        _ tx: PostgresTransaction, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation
    ) throws -> SyncMutationOutcome {
        let c = tx.connection
        let stored = try PostgresStore.fetchEntry(c, userID: userID, id: m.id, lock: false)
        let step = SyncPush.entry(
            m, stored: stored, userID: userID, stamp: WriteStamp(at: m.clientUpdatedAt, device: deviceID),
            now: now)
        let position: Int64
        switch step {
        case .answer(let outcome):
            return outcome
        case .unchanged:
            // A retried push (spec §5): nothing is written, nothing is recomputed, no position is taken.
            let stored = try c.query(
                "SELECT change_position FROM water_entries WHERE user_id = $1 AND id = $2",
                [.text(userID), .text(m.id)]
            ).first?[0].int64
            return SyncPush.applied(
                step, collection: "water_entries", id: m.id, position: stored ?? 0, now: now,
                wrap: SyncDocument.waterEntry)
        case .upsert(let entry):
            let content = entry.content
            if let hk = content.healthKitUUID,
                !(try c.query(
                    "SELECT 1 FROM water_entries WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0 AND id <> $3",
                    [.text(userID), .text(hk), .text(m.id)])).isEmpty
            {
                return .rejected(SyncRejection(code: "health_kit_uuid_exists"))
            }
            position = try changePosition(tx, userID: userID, row: ChangeRows.entry(userID, m.id))
            try c.update(
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12, $13)
                ON CONFLICT (user_id, id) DO UPDATE SET amount_ml = $3, logged_at = $4, source = $5,
                    health_kit_uuid = $6, note = $7, updated_at = $9, version = $10, deleted = 0,
                    change_position = $11, lww_at = $12, lww_device = $13
                """,
                [
                    .text(userID), .text(m.id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(entry.createdAt), .integer(now), .integer(entry.version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        case .tombstone(let version):
            position = try changePosition(tx, userID: userID, row: ChangeRows.entry(userID, m.id))
            try c.update(
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ($1, $2, 0, 0, 'api', NULL, NULL, $3, $3, $4, 1, $5, $6, $7)
                ON CONFLICT (user_id, id) DO UPDATE SET updated_at = $3, version = $4, deleted = 1,
                    change_position = $5, lww_at = $6, lww_device = $7
                """,
                [
                    .text(userID), .text(m.id), .integer(now), .integer(version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        }
        // Daily totals and achievements change in the same transaction (spec §4).
        try PostgresStore.entriesChanged(tx, userID: userID, deltas: SyncPush.entryDeltas(step, stored: stored), now: now)
        return SyncPush.applied(
            step, collection: "water_entries", id: m.id, position: position, now: now,
            wrap: SyncDocument.waterEntry)
    }

    private func applyProfileMutation(
        _ tx: PostgresTransaction, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation,
        _ profilePatch: @Sendable (JSONValue, UserProfile) throws -> UserProfile
    )
        throws -> SyncMutationOutcome
    {
        let c = tx.connection
        let patch: JSONValue
        switch SyncPush.profileTarget(m, userID: userID) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let p): patch = p
        }
        guard
            let row = try c.query(
                "SELECT \(StoreRows.userColumns), lww_at, lww_device FROM users WHERE id = $1",
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
            let stored = try c.query("SELECT change_position FROM users WHERE id = $1", [.text(userID)]).first?[0].int64
            return SyncPush.applied(
                step, collection: "profile", id: userID, position: stored ?? 0, now: now,
                wrap: SyncDocument.profile)
        }
        let position = try changePosition(tx, userID: userID, row: ChangeRows.user(userID))
        try c.update(
            """
            UPDATE users SET email = $1, email_verified = $2, display_name = $3, weight_kg = $4, activity_level = $5,
                wake_time = $6, sleep_time = $7, timezone = $8, locale = $9, daily_goal_ml = $10, cup_sizes_ml = $11,
                updated_at = $12, version = $13, change_position = $14, lww_at = $15, lww_device = $16
            WHERE id = $17
            """,
            StoreRows.profileValues(next) + [
                .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
                .text(userID),
            ])
        // A new time zone or goal re-buckets days and re-evaluates goals, as for REST writes.
        try PostgresStore.profileChanged(tx, previous: current, current: next, now: now)
        return SyncPush.applied(
            step, collection: "profile", id: userID, position: position, now: now,
            wrap: SyncDocument.profile)
    }

}

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
