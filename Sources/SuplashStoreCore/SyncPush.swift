import SuplashDomain
import SuplashJSON
import SuplashSQL
import SuplashStoreRows

/// The sync push (spec §5, "Push"): mutations applied in order in one write transaction, each
/// decided last-write-wins on (`clientUpdatedAt`, device) by the domain's `SyncPush`. The
/// user's row lock comes first: every other writer of this user's documents (REST writes,
/// other pushes, email verification, Apple takeover) takes it too, so the decisions read rows
/// no concurrent writer, on any instance, can change before this commits — the serialised
/// writer SQLite has. Each applied mutation takes a change position; on PostgreSQL the answers
/// carry provisional ones until the commit (`CommittedPositions.final`), and since later
/// mutations re-read what earlier ones wrote (achievements), positioned writes are not
/// deferred. Entry, day and profile writes recompute daily totals, goals and achievements in
/// the same transaction (spec §4, `EntryBookkeeping`).
extension SyncRepository where Self: SQLStore {
    public func applyMutations(
        userID: String, deviceID: String, now: Int64, mutations: [SyncMutation],
        profilePatch: @escaping @Sendable (JSONValue, UserProfile) throws -> UserProfile
    ) throws -> (outcomes: [SyncMutationOutcome], headPosition: Int64) {
        let ((outcomes, head), positions) = try transactionReportingPositions { tx in
            tx.defersPositionedWrites = false
            tx.writerDeviceID = deviceID
            guard try UserLock.lock(tx, userID: userID) != nil else { throw RepositoryError.notFound }
            let push = SyncPushContext(userID: userID, deviceID: deviceID, now: now)
            var changed: Set<String> = []
            let outcomes = try mutations.map { m -> SyncMutationOutcome in
                let outcome: SyncMutationOutcome =
                    switch m.collection {
                    case "water_entries": try push.entry(tx, m)
                    case "profile": try push.profile(tx, m, profilePatch)
                    case "bills": try push.bill(tx, m)
                    case "days": try push.day(tx, m)
                    case "achievements": .rejected(SyncRejection(code: "read_only_collection"))
                    default: .rejected(SyncRejection(code: "unknown_collection"))
                    }
                if case .applied = outcome { changed.insert(m.collection) }
                return outcome
            }
            // The next reminder once for the whole push (not per mutation).
            if !changed.isDisjoint(with: ["water_entries", "profile", "days", "bills"]) {
                try ReminderPlanner.pushed(
                    tx, userID: userID, entryDeltas: push.entryDeltas.all, daysWritten: changed.contains("days"),
                    profileWritten: changed.contains("profile"), billsWritten: changed.contains("bills"),
                    revisedBills: push.billRevisions.previous, now: now)
            }
            return (outcomes, try tx.queryOne(SyncFeedSQL.head, [])?[0].int64 ?? 0)
        }
        let final = outcomes.map { outcome -> SyncMutationOutcome in
            guard case .applied(var change) = outcome else { return outcome }
            change.position = positions.final(change.position)
            return .applied(change)
        }
        return (final, max(head, positions.highest ?? head))
    }
}

/// The appliers of one push's mutations, one per collection. A mutation the domain answers
/// (rejected, superseded) or a retried one that changes nothing writes nothing, recomputes
/// nothing and takes no position: its answer carries the stored position.
/// The entry versions a push wrote, gathered across its mutations.
private final class EntryDeltaLog {
    var all: [EntryDelta] = []
}

/// The live bills a push wrote, with their content before its first mutation of each.
private final class BillRevisionLog {
    var previous: [String: BillContent] = [:]
    var seen: Set<String> = []
}

private struct SyncPushContext {
    let userID: String
    let deviceID: String
    let now: Int64
    /// Every entry version the push's mutations made appear or disappear (for the one recompute
    /// of the next reminder after them, `ReminderPlanner.pushed`).
    let entryDeltas = EntryDeltaLog()
    /// Live bills the push revised, for a queued alert whose text changed
    /// (`BillReminders.resendWithNewText`).
    let billRevisions = BillRevisionLog()

    func stamp(_ m: SyncMutation) -> WriteStamp { WriteStamp(at: m.clientUpdatedAt, device: deviceID) }

    /// The stored position of a row the push leaves unchanged (0 when there is none).
    func storedPosition(_ tx: some StoreTransaction, _ sql: SQLText, _ key: String) throws -> Int64 {
        try tx.queryOne(sql, [.text(userID), .text(key)])?[0].int64 ?? 0
    }

    /// A `water_entries` mutation: last-write-wins upsert or tombstone (`SyncPush.entry`); an
    /// upsert onto a HealthKit sample held by another live entry is rejected
    /// `health_kit_uuid_exists`.
    func entry(_ tx: some StoreTransaction, _ m: SyncMutation) throws -> SyncMutationOutcome {
        let stored = try tx.queryOne(SyncPushSQL.entry, [.text(userID), .text(m.id)]).map { row in
            let entry = StoreRows.entry(row)
            return Stamped(entry, deleted: entry.deleted, stamp: StoreRows.stamp(row))
        }
        let step = SyncPush.entry(m, stored: stored, userID: userID, stamp: stamp(m), now: now)
        let position: Int64
        switch step {
        case .answer(let outcome):
            return outcome
        case .unchanged:
            position = try storedPosition(tx, SyncPushSQL.entryPosition, m.id)
            return SyncPush.applied(
                step, collection: "water_entries", id: m.id, position: position, now: now, wrap: SyncDocument.waterEntry)
        case .upsert(let entry):
            let content = entry.content
            if let hk = content.healthKitUUID,
                try tx.queryOne(SyncPushSQL.healthKitTaken, [.text(userID), .text(hk), .text(m.id)]) != nil
            {
                return .rejected(SyncRejection(code: "health_kit_uuid_exists"))
            }
            position = try tx.changePosition(of: .entry(userID, m.id), userID: userID)
            try tx.execute(
                SyncPushSQL.upsertEntry,
                [
                    .text(userID), .text(m.id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                    .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                    .integer(entry.createdAt), .integer(now), .integer(entry.version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        case .tombstone(let version):
            position = try tx.changePosition(of: .entry(userID, m.id), userID: userID)
            try tx.execute(
                SyncPushSQL.entryTombstone,
                [
                    .text(userID), .text(m.id), .integer(now), .integer(version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        }
        let deltas = SyncPush.entryDeltas(step, stored: stored)
        entryDeltas.all += deltas
        try EntryBookkeeping.entriesChanged(tx, userID: userID, deltas: deltas, now: now, planReminders: false)
        return SyncPush.applied(
            step, collection: "water_entries", id: m.id, position: position, now: now, wrap: SyncDocument.waterEntry)
    }

    /// A `profile` mutation (id = the user's id): a merge patch applied last-write-wins
    /// (`SyncPush.profile`); a new time zone or goal re-buckets days and re-evaluates goals, as
    /// for REST writes.
    func profile(
        _ tx: some StoreTransaction, _ m: SyncMutation,
        _ profilePatch: (JSONValue, UserProfile) throws -> UserProfile
    ) throws -> SyncMutationOutcome {
        let patch: JSONValue
        switch SyncPush.profileTarget(m, userID: userID) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let p): patch = p
        }
        guard let row = try tx.queryOne(SyncPushSQL.profile, [.text(userID)]) else { throw RepositoryError.notFound }
        let current = StoreRows.user(row).profile
        let step = try SyncPush.profile(
            patch: patch, stored: Stamped(current, stamp: StoreRows.stamp(row)), stamp: stamp(m), now: now,
            apply: profilePatch)
        guard case .upsert(let next) = step else {
            let position = try tx.queryOne(SyncPushSQL.profilePosition, [.text(userID)])?[0].int64 ?? 0
            return SyncPush.applied(
                step, collection: "profile", id: userID, position: position, now: now, wrap: SyncDocument.profile)
        }
        let position = try tx.changePosition(of: .user(userID), userID: userID)
        try tx.execute(
            SyncPushSQL.updateProfile,
            StoreRows.profileValues(next) + [.integer(position), .integer(m.clientUpdatedAt), .text(deviceID), .text(userID)])
        try EntryBookkeeping.profileChanged(tx, previous: current, current: next, now: now, planReminders: false)
        return SyncPush.applied(step, collection: "profile", id: userID, position: position, now: now, wrap: SyncDocument.profile)
    }

    /// A `bills` mutation: last-write-wins upsert (a whole bill, validated as `POST …/bills`) or
    /// tombstone (`SyncPush.bill`). An upsert onto a (provider, subscriberNo, period) held by
    /// another live bill is rejected `bill_exists`; tombstones are outside that uniqueness.
    func bill(_ tx: some StoreTransaction, _ m: SyncMutation) throws -> SyncMutationOutcome {
        let stored = try tx.queryOne(SyncPushSQL.bill, [.text(userID), .text(m.id)]).map { row in
            Stamped(StoreRows.bill(row), deleted: StoreRows.billDeleted(row), stamp: StoreRows.stamp(row))
        }
        // What a queued alert of the bill says: its content before the push's first mutation of it.
        if billRevisions.seen.insert(m.id).inserted, let stored, !stored.deleted {
            billRevisions.previous[m.id] = stored.document.content
        }
        let step = SyncPush.bill(m, stored: stored, userID: userID, stamp: stamp(m), now: now)
        let position: Int64
        switch step {
        case .answer(let outcome):
            return outcome
        case .unchanged:
            position = try storedPosition(tx, SyncPushSQL.billPosition, m.id)
        case .upsert(let bill):
            let content = bill.content
            let holder: [SQLValue] = [
                .text(userID), .text(content.provider), .text(content.subscriberNo), .text(content.period.description),
                .text(m.id),
            ]
            if try tx.queryOne(SyncPushSQL.billTaken, holder) != nil {
                return .rejected(SyncRejection(code: "bill_exists"))
            }
            position = try tx.changePosition(of: .bill(userID, m.id), userID: userID)
            try tx.execute(
                SyncPushSQL.upsertBill,
                StoreRows.billValues(content) + [
                    .text(userID), .text(m.id), .integer(bill.createdAt), .integer(now), .integer(bill.version),
                    .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        case .tombstone(let version):
            position = try tx.changePosition(of: .bill(userID, m.id), userID: userID)
            try tx.execute(
                SyncPushSQL.billTombstone,
                [
                    .text(userID), .text(m.id), .integer(now), .integer(version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        }
        return SyncPush.applied(step, collection: "bills", id: m.id, position: position, now: now, wrap: SyncDocument.bill)
    }

    /// A `days` mutation (id = the local date): last-write-wins replacement of the day's context
    /// (`SyncPush.day`); a delete clears the context (a `PUT` of `{}`), so the day document
    /// stays with both fields null. The day's goal, streaks and badges are recomputed as for
    /// `PUT …/days/{date}`.
    func day(_ tx: some StoreTransaction, _ m: SyncMutation) throws -> SyncMutationOutcome {
        let date: LocalDate
        let content: DayContextContent
        switch SyncPush.dayTarget(m) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let target): (date, content) = target
        }
        guard let profile = try tx.queryOne(BookkeepingSQL.profile, [.text(userID)]).map({ StoreRows.user($0).profile }) else {
            throw RepositoryError.notFound
        }
        let key = date.description
        let stored = try tx.queryOne(SyncPushSQL.day, [.text(userID), .text(key)]).map { row in
            Stamped(StoreRows.day(row), stamp: StoreRows.stamp(row))
        }
        let step = SyncPush.day(date: date, content: content, stored: stored, stamp: stamp(m), now: now)
        guard case .upsert(let day) = step else {
            let position = try storedPosition(tx, SyncPushSQL.dayPosition, key)
            return SyncPush.applied(step, collection: "days", id: key, position: position, now: now, wrap: SyncDocument.day)
        }
        let position = try tx.changePosition(of: .day(userID, date), userID: userID)
        try tx.execute(
            SyncPushSQL.upsertDay,
            [
                .text(userID), .text(key), content.maxTemperatureC.map(SQLValue.real) ?? .null,
                content.activeMinutes.map { .integer(Int64($0)) } ?? .null, .integer(day.createdAt), .integer(now),
                .integer(day.version), .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
            ])
        try EntryBookkeeping.daysChanged(tx, userID: userID, profile: profile, dates: [date], now: now, planReminders: false)
        return SyncPush.applied(step, collection: "days", id: key, position: position, now: now, wrap: SyncDocument.day)
    }
}

enum SyncPushSQL {
    static let entry = SQLText(
        "SELECT \(StoreRows.entryColumns), lww_device FROM water_entries WHERE user_id = ?1 AND id = ?2")
    static let entryPosition = SQLText("SELECT change_position FROM water_entries WHERE user_id = ?1 AND id = ?2")
    static let healthKitTaken = SQLText(
        "SELECT 1 FROM water_entries WHERE user_id = ?1 AND health_kit_uuid = ?2 AND deleted = 0 AND id <> ?3")
    static let upsertEntry = SQLText(
        """
        INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
            created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13)
        ON CONFLICT (user_id, id) DO UPDATE SET amount_ml = ?3, logged_at = ?4, source = ?5,
            health_kit_uuid = ?6, note = ?7, updated_at = ?9, version = ?10, deleted = 0,
            change_position = ?11, lww_at = ?12, lww_device = ?13
        """)
    static let entryTombstone = SQLText(
        """
        INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, health_kit_uuid, note,
            created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES (?1, ?2, 0, 0, 'api', NULL, NULL, ?3, ?3, ?4, 1, ?5, ?6, ?7)
        ON CONFLICT (user_id, id) DO UPDATE SET updated_at = ?3, version = ?4, deleted = 1,
            change_position = ?5, lww_at = ?6, lww_device = ?7
        """)
    static let profile = SQLText("SELECT \(StoreRows.userColumns), lww_at, lww_device FROM users WHERE id = ?1")
    static let profilePosition = SQLText("SELECT change_position FROM users WHERE id = ?1")
    static let updateProfile = SQLText(
        """
        UPDATE users SET email = ?1, email_verified = ?2, display_name = ?3, weight_kg = ?4, activity_level = ?5,
            wake_time = ?6, sleep_time = ?7, timezone = ?8, locale = ?9, daily_goal_ml = ?10, cup_sizes_ml = ?11,
            updated_at = ?12, version = ?13, reminders = ?14, change_position = ?15, lww_at = ?16, lww_device = ?17
        WHERE id = ?18
        """)
    static let bill = SQLText("SELECT \(StoreRows.billColumns), lww_device FROM bills WHERE user_id = ?1 AND id = ?2")
    static let billPosition = SQLText("SELECT change_position FROM bills WHERE user_id = ?1 AND id = ?2")
    static let billTaken = SQLText(
        """
        SELECT 1 FROM bills
        WHERE user_id = ?1 AND provider = ?2 AND subscriber_no = ?3 AND period = ?4 AND deleted = 0 AND id <> ?5
        """)
    static let upsertBill = SQLText(
        """
        INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
            paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0, ?14, ?15, ?16)
        ON CONFLICT (user_id, id) DO UPDATE SET provider = ?1, subscriber_no = ?2, period = ?3,
            consumption_milli_m3 = ?4, amount_minor = ?5, currency = ?6, due_date = ?7, paid_at = ?8,
            updated_at = ?12, version = ?13, deleted = 0, change_position = ?14, lww_at = ?15, lww_device = ?16
        """)
    static let billTombstone = SQLText(
        """
        INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
            paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
        VALUES ('', '', '', 0, 0, 'TRY', '', NULL, ?1, ?2, ?3, ?3, ?4, 1, ?5, ?6, ?7)
        ON CONFLICT (user_id, id) DO UPDATE SET updated_at = ?3, version = ?4, deleted = 1,
            change_position = ?5, lww_at = ?6, lww_device = ?7
        """)
    static let day = SQLText(
        "SELECT \(StoreRows.dayColumns), lww_at, lww_device FROM days WHERE user_id = ?1 AND local_date = ?2")
    static let dayPosition = SQLText("SELECT change_position FROM days WHERE user_id = ?1 AND local_date = ?2")
    static let upsertDay = SQLText(
        """
        INSERT INTO days (user_id, local_date, max_temperature_c, active_minutes, created_at, updated_at, version,
            change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        ON CONFLICT (user_id, local_date) DO UPDATE SET max_temperature_c = ?3, active_minutes = ?4,
            updated_at = ?6, version = ?7, change_position = ?8, lww_at = ?9, lww_device = ?10
        """)
}
