import SuplashDomain
import SuplashPostgres
import SuplashStoreRows

/// Water entries; every write recomputes the touched days' totals and the achievements in
/// its own transaction (`entriesChanged`), as on SQLite.
extension PostgresStore: WaterEntryRepository {
    /// Reads one entry row (live or tombstone) with its last-write-wins stamp; `lock` takes
    /// its row lock for a read-modify-write.
    static func fetchEntry(_ c: PostgresConnection, userID: String, id: String, lock: Bool) throws -> Stamped<WaterEntry>? {
        let statement = fetchEntryStatement(userID: userID, id: id, lock: lock)
        return stampedEntry(try c.query(statement.sql, statement.args))
    }

    /// The statement of `fetchEntry`, to send in a pipeline; decode with `stampedEntry`.
    static func fetchEntryStatement(userID: String, id: String, lock: Bool) -> PostgresStatement {
        PostgresStatement(
            lock
                ? "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = $1 AND id = $2 FOR UPDATE"
                : "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = $1 AND id = $2",
            [.text(userID), .text(id)])
    }

    static func stampedEntry(_ rows: [PostgresRow]) -> Stamped<WaterEntry>? {
        guard let row = rows.first else { return nil }
        let entry = StoreRows.entry(row)
        return Stamped(entry, deleted: entry.deleted, stamp: StoreRows.stamp(row))
    }

    /// Locks the user, then reads (and locks) the entry, in one round trip.
    private static func lockAndFetch(_ c: PostgresConnection, userID: String, id: String, lockEntry: Bool) throws
        -> (profile: UserProfile, stored: Stamped<WaterEntry>?)
    {
        let results = try c.pipeline([lockUserStatement(userID), fetchEntryStatement(userID: userID, id: id, lock: lockEntry)])
        guard let profile = results[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
        return (profile, stampedEntry(results[1]))
    }

    /// Check, then insert: when a concurrent writer inserts the same id or HealthKit sample
    /// first, the insert hits the primary key or `water_entries_health_kit` and the whole
    /// transaction is re-run (`PostgresStore.write`), which then answers `.existing` or a
    /// conflict from the committed row — as on SQLite.
    public func createEntry(
        userID: String, id: String, content: WaterEntryContent, deviceID: String?,
        now: Int64
    ) throws -> EntryCreateOutcome {
        try write { tx in
            let c = tx.connection
            // Outside any lock, with BEGIN in one round trip: the profile (its zone picks the
            // day the entry lands on), the entry id and the HealthKit sample. A re-post is
            // answered from these; a concurrent insert of the same id or sample is caught by
            // the unique indexes at the commit, and the re-run answers from the committed row.
            var checks = [
                PostgresStatement("SELECT \(StoreRows.userColumns) FROM users WHERE id = $1", [.text(userID)]),
                PostgresStore.fetchEntryStatement(userID: userID, id: id, lock: false),
            ]
            if let hk = content.healthKitUUID {
                checks.append(
                    PostgresStatement(
                        """
                        SELECT \(StoreRows.entryColumns) FROM water_entries
                        WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0
                        """, [.text(userID), .text(hk)]))
            }
            let checked = try c.pipeline(checks)
            guard let guess = checked[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
            if let existing = try DocumentWrites.existing(
                PostgresStore.stampedEntry(checked[1]), content: content,
                storedContent: \.content, deletedCode: "entry_deleted",
                existsCode: "entry_exists")
            {
                return .existing(existing)
            }
            if checked.count > 2, let holder = checked[2].first.map(StoreRows.entry) { return .existing(holder) }
            // Then the user's row lock with the reads of the daily totals, achievements and
            // context the entry touches (READ COMMITTED: read after the lock was granted), so
            // the lock is held for two round trips: these reads, then the writes with the
            // commit. If the zone changed meanwhile, they are read again.
            let deltas = [EntryDelta(content, sign: 1)]
            let locked = try c.pipeline(
                [PostgresStore.lockUserStatement(userID)]
                    + PostgresStore.entryRecomputeReads(userID: userID, timezone: guess.timezone, deltas: deltas))
            guard let profile = locked[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
            // Written at the commit with its position (nothing below reads it).
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.entry(userID, id),
                """
                INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
                    created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $position, $10, $11)
                """,
                [
                    .text(userID), .text(id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(now), .integer(now), .integer(now), .text(deviceID ?? ""),
                ])
            try PostgresStore.entriesChanged(
                tx, userID: userID, profile: profile, deltas: deltas, now: now,
                prefetched: (guess.timezone, locked[1...]))
            return .created(
                WaterEntry(
                    id: id, userID: userID, content: content, createdAt: now, updatedAt: now,
                    version: 1, deleted: false))
        }
    }

    public func entry(userID: String, id: String) throws -> WaterEntry? {
        try read { c in
            try c.query(
                "SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = $1 AND id = $2 AND deleted = 0",
                [.text(userID), .text(id)]
            ).first.map(StoreRows.entry)
        }
    }

    public func updateEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool,
        _ transform: @escaping @Sendable (WaterEntryContent) throws -> WaterEntryContent
    ) throws -> WaterEntry {
        try write { tx in
            let c = tx.connection
            let (profile, stored) = try PostgresStore.lockAndFetch(c, userID: userID, id: id, lockEntry: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            if let hk = content.healthKitUUID, hk != current.content.healthKitUUID,
                !(try c.query(
                    "SELECT 1 FROM water_entries WHERE user_id = $1 AND health_kit_uuid = $2 AND deleted = 0",
                    [.text(userID), .text(hk)])).isEmpty
            {
                throw RepositoryError.conflict(code: "health_kit_uuid_exists")
            }
            let next = DocumentWrites.revised(current, content: content, now: now)
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.entry(userID, id),
                """
                UPDATE water_entries SET amount_ml = $1, logged_at = $2, source = $3, health_kit_uuid = $4, note = $5,
                    updated_at = $6, version = $7, change_position = $position, lww_at = $8, lww_device = $9
                WHERE user_id = $10 AND id = $11
                """,
                [
                    .integer(Int64(content.amountMl)), .integer(content.loggedAt), .text(content.source.rawValue),
                    .optionalText(content.healthKitUUID), .optionalText(content.note), .integer(now), .integer(next.version),
                    .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            try PostgresStore.entriesChanged(
                tx, userID: userID, profile: profile,
                deltas: [EntryDelta(current.content, sign: -1), EntryDelta(content, sign: 1)],
                now: now)
            return next
        }
    }

    public func deleteEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool
    ) throws {
        try write { tx in
            let c = tx.connection
            let (profile, stored) = try PostgresStore.lockAndFetch(c, userID: userID, id: id, lockEntry: true)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            try self.positionedWrite(
                tx, userID: userID, row: ChangeRows.entry(userID, id),
                """
                UPDATE water_entries SET deleted = 1, updated_at = $1, version = version + 1, change_position = $position,
                    lww_at = $2, lww_device = $3
                WHERE user_id = $4 AND id = $5
                """, [.integer(now), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id)])
            try PostgresStore.entriesChanged(
                tx, userID: userID, profile: profile,
                deltas: [EntryDelta(current.content, sign: -1)], now: now)
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
            try c.query(
                PostgresStore.listEntriesSQL,
                [
                    .text(userID), .integer(from ?? Int64.min), .integer(to ?? Int64.max), .integer(cursor?.loggedAt ?? Int64.max),
                    .text(cursor?.id ?? "\u{10FFFF}"), .integer(Int64(limit)),
                ]
            ).map(StoreRows.entry)
        }
    }
}
