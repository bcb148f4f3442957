import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Water entries (spec §4, REST `/v1/entries`): every write updates the touched days' totals
/// and the achievements in its own transaction (`EntryBookkeeping.entriesChanged`), under the
/// user's lock (`UserLock`), with the entry's change position.
extension WaterEntryRepository where Self: SQLStore {
    /// Checks, then inserts. The checks — the user's time zone (it picks the day the entry lands
    /// on), the entry id and the HealthKit sample — go in one round trip outside any lock, and a
    /// re-post is answered from them; then the user's lock with the bookkeeping's reads in one
    /// round trip (re-read if the zone changed meanwhile); the insert joins the commit. When a
    /// concurrent writer inserts the same id or sample first, the insert hits the primary key or
    /// `water_entries_health_kit` and PostgreSQL re-runs the transaction, which then answers
    /// `.existing` or a conflict from the committed row (SQLite's single writer never gets there).
    /// `@inlinable` (the hottest write), as `EntryBookkeeping.entriesChanged`.
    @inlinable public func createEntry(
        userID: String, id: String, content: WaterEntryContent, deviceID: String?, now: Int64
    ) throws -> EntryCreateOutcome {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            var checks = [
                SQLStatement(EntrySQL.timezone, [.text(userID)]), EntryStatements.fetch(userID: userID, id: id, lock: false),
            ]
            if let sample = content.healthKitUUID {
                checks.append(SQLStatement(EntrySQL.liveWithSample, [.text(userID), .text(sample)]))
            }
            let checked = try tx.pipeline(checks)
            guard let user = checked[0].first else { throw RepositoryError.notFound }
            let zone = user[0].text ?? UserProfile.defaultTimezone
            // On PostgreSQL the next reminder's reads travel with the lock (no round trip more);
            // SQLite reads them only when the recompute runs (not when the goal stays met).
            let reminders =
                tx.dialect == .postgres
                ? ReminderPlanner.prefetch(
                    userID: userID, timezone: zone, wakeTime: user[1].text ?? "", sleepTime: user[2].text ?? "",
                    reminders: user[3].text, now: now) : nil
            if let existing = try DocumentWrites.existing(
                EntryStatements.stamped(checked[1]), content: content, storedContent: \.content,
                deletedCode: "entry_deleted", existsCode: "entry_exists")
            {
                return .existing(existing)
            }
            if checked.count > 2, let holder = checked[2].first.map(StoreRows.entry) { return .existing(holder) }
            let deltas = [EntryDelta(content, sign: 1, id: id)]
            let bookkeeping = EntryBookkeeping.recomputeReads(userID: userID, timezone: zone, deltas: deltas)
            let locked = try tx.pipeline(
                [SQLStatement(UserLock.statement, [.text(userID)])] + bookkeeping + (reminders?.statements ?? []))
            guard let profile = locked[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
            try tx.positionedWrite(
                of: .entry(userID, id), userID: userID, EntrySQL.insert,
                [
                    .text(userID), .text(id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(now), .integer(now), .integer(now), .text(deviceID ?? ""),
                ])
            try EntryBookkeeping.entriesChanged(
                tx, userID: userID, profile: profile, deltas: deltas, now: now,
                prefetched: (zone, locked[1...bookkeeping.count]),
                reminders: reminders.map { ($0, locked[(bookkeeping.count + 1)...]) })
            return .created(
                WaterEntry(id: id, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1, deleted: false))
        }
    }

    public func entry(userID: String, id: String) throws -> WaterEntry? {
        try reading { c in try c.queryOne(EntrySQL.live, [.text(userID), .text(id)]).map(StoreRows.entry) }
    }

    public func updateEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool,
        _ transform: @escaping @Sendable (WaterEntryContent) throws -> WaterEntryContent
    ) throws -> WaterEntry {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, stored) = try Self.lockAndFetch(tx, userID: userID, id: id)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let content = try transform(current.content)
            if let sample = content.healthKitUUID, sample != current.content.healthKitUUID,
                try tx.queryOne(EntrySQL.sampleTaken, [.text(userID), .text(sample)]) != nil
            {
                throw RepositoryError.conflict(code: "health_kit_uuid_exists")
            }
            let next = DocumentWrites.revised(current, content: content, now: now)
            let deltas = [EntryDelta(current.content, sign: -1, id: id), EntryDelta(content, sign: 1, id: id)]
            if ReminderPlanner.readsIntakeOf(deltas, profile: profile, now: now) { tx.defersPositionedWrites = false }
            try tx.positionedWrite(
                of: .entry(userID, id), userID: userID, EntrySQL.update,
                [
                    .integer(Int64(content.amountMl)), .integer(content.loggedAt), .text(content.source.rawValue),
                    .optionalText(content.healthKitUUID), .optionalText(content.note), .integer(now), .integer(next.version),
                    .integer(stamp.at), .text(stamp.device), .text(userID), .text(id),
                ])
            try EntryBookkeeping.entriesChanged(tx, userID: userID, profile: profile, deltas: deltas, now: now)
            return next
        }
    }

    public func deleteEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool
    ) throws {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            let (profile, stored) = try Self.lockAndFetch(tx, userID: userID, id: id)
            let current = try DocumentWrites.target(stored, precondition: precondition)
            let stamp = DocumentWrites.stamp(now: now, stored: stored?.stamp, deviceID: deviceID)
            let deltas = [EntryDelta(current.content, sign: -1, id: id)]
            if ReminderPlanner.readsIntakeOf(deltas, profile: profile, now: now) { tx.defersPositionedWrites = false }
            try tx.positionedWrite(
                of: .entry(userID, id), userID: userID, EntrySQL.delete,
                [.integer(now), .integer(stamp.at), .text(stamp.device), .text(userID), .text(id)])
            try EntryBookkeeping.entriesChanged(tx, userID: userID, profile: profile, deltas: deltas, now: now)
        }
    }

    public func listEntries(userID: String, from: Int64?, to: Int64?, after cursor: EntryCursor?, limit: Int) throws -> [WaterEntry] {
        try reading { c in
            try c.query(
                EntryStatements.listSQL,
                [
                    .text(userID), .integer(from ?? Int64.min), .integer(to ?? Int64.max), .integer(cursor?.loggedAt ?? Int64.max),
                    .text(cursor?.id ?? "\u{10FFFF}"), .integer(Int64(limit)),
                ]
            ).map(StoreRows.entry)
        }
    }

    /// Locks the user, then reads and locks the entry, in one round trip.
    /// - Throws: `RepositoryError.notFound` when there is no such user; the engine's error.
    static func lockAndFetch(_ tx: some StoreTransaction, userID: String, id: String) throws
        -> (profile: UserProfile, stored: Stamped<WaterEntry>?)
    {
        let results = try tx.pipeline([
            SQLStatement(UserLock.statement, [.text(userID)]), EntryStatements.fetch(userID: userID, id: id, lock: true),
        ])
        guard let profile = results[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
        return (profile, EntryStatements.stamped(results[1]))
    }
}

/// Entry statements other use cases share (sync pushes, batches, query-plan tests).
public enum EntryStatements {
    /// The list query (keyset, newest first; served by `water_entries_list`): binds `?1` user
    /// id, `?2` / `?3` the `logged_at` range (ms, `[from, to)`), `?4` / `?5` the cursor's
    /// `logged_at` and id, `?6` the limit. Rows: `StoreRows.entryColumns`.
    public static let listSQL = SQLText(
        """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2 AND logged_at < ?3
          AND logged_at <= ?4 AND (logged_at < ?4 OR id < ?5)
        ORDER BY logged_at DESC, id DESC
        LIMIT ?6
        """)

    /// The read of one entry row (live or tombstone) with its last-write-wins stamp, for a
    /// `pipeline`; `lock` takes its row lock (`FOR UPDATE` on PostgreSQL) for a
    /// read-modify-write. Decode with `stamped(_:)`.
    public static func fetch(userID: String, id: String, lock: Bool) -> SQLStatement {
        SQLStatement(lock ? EntrySQL.fetchLocked : EntrySQL.fetch, [.text(userID), .text(id)])
    }

    /// The entry of `rows` (of `fetch`) with its stamp, or nil when there is none.
    @inlinable public static func stamped(_ rows: [some SQLRowValues]) -> Stamped<WaterEntry>? {
        guard let row = rows.first else { return nil }
        let entry = StoreRows.entry(row)
        return Stamped(entry, deleted: entry.deleted, stamp: StoreRows.stamp(row))
    }
}

@usableFromInline enum EntrySQL {
    /// What an entry create needs before the lock: the zone (the entry's day) and what the next
    /// reminder's reads depend on.
    @usableFromInline static let timezone = SQLText("SELECT timezone, wake_time, sleep_time, reminders FROM users WHERE id = ?1")
    @usableFromInline static let fetch = SQLText(
        "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = ?1 AND id = ?2")
    @usableFromInline static let fetchLocked = SQLText { d in
        "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = ?1 AND id = ?2 \(d.forUpdate())"
    }
    @usableFromInline static let liveWithSample = SQLText(
        """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ?1 AND health_kit_uuid = ?2 AND deleted = 0
        """)
    @usableFromInline static let sampleTaken = SQLText(
        "SELECT 1 FROM water_entries WHERE user_id = ?1 AND health_kit_uuid = ?2 AND deleted = 0")
    @usableFromInline static let live = SQLText(
        "SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = ?1 AND id = ?2 AND deleted = 0")
    /// The position is `?12`.
    @usableFromInline static let insert = SQLText(
        """
        INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
            created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, 0, ?12, ?10, ?11)
        """)
    /// The position is `?12`.
    @usableFromInline static let update = SQLText(
        """
        UPDATE water_entries SET amount_ml = ?1, logged_at = ?2, source = ?3, health_kit_uuid = ?4, note = ?5,
            updated_at = ?6, version = ?7, change_position = ?12, lww_at = ?8, lww_device = ?9
        WHERE user_id = ?10 AND id = ?11
        """)
    /// The position is `?6`.
    @usableFromInline static let delete = SQLText(
        """
        UPDATE water_entries SET deleted = 1, updated_at = ?1, version = version + 1, change_position = ?6,
            lww_at = ?2, lww_device = ?3
        WHERE user_id = ?4 AND id = ?5
        """)
}
