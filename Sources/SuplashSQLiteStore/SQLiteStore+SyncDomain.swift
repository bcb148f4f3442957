import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreRows

/// The domain collections of the change feed and the sync push (spec §5): `bills`, `days`
/// and `achievements`. Each feed source is served by its `(user_id, change_position)` index
/// (`bills_changes`, `days_changes`, `achievements_changes`, migration 0003).
extension SQLiteStore {
    // MARK: - Push

    /// A `bills` mutation: last-write-wins upsert (a whole bill, validated as `POST …/bills`)
    /// or tombstone, decided by `SyncPush.bill`. An upsert onto a (provider, subscriberNo,
    /// period) held by another live bill is rejected `bill_exists`.
    func applyBillMutation(
        _ ctx: WriteContext, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation
    ) throws -> SyncMutationOutcome {
        let c = ctx.connection
        let stored = try SQLiteStore.fetchBill(c, userID: userID, id: m.id)
        let step = SyncPush.bill(
            m, stored: stored, userID: userID, stamp: WriteStamp(at: m.clientUpdatedAt, device: deviceID),
            now: now)
        let position: Int64
        switch step {
        case .answer(let outcome):
            return outcome
        case .unchanged:
            // A retried push (spec §5): nothing is written.
            position =
                try c.scalarInt64(
                    "SELECT change_position FROM bills WHERE user_id = ? AND id = ?",
                    [.text(userID), .text(m.id)]) ?? 0
        case .upsert(let bill):
            do {
                try SQLiteStore.checkUnique(c, userID: userID, excluding: m.id, bill.content)
            } catch RepositoryError.conflict(code: let code) {
                return .rejected(SyncRejection(code: code))
            }
            position = try takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
                    paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0, ?14, ?15, ?16)
                ON CONFLICT (user_id, id) DO UPDATE SET provider = ?1, subscriber_no = ?2, period = ?3,
                    consumption_milli_m3 = ?4, amount_minor = ?5, currency = ?6, due_date = ?7, paid_at = ?8,
                    updated_at = ?12, version = ?13, deleted = 0, change_position = ?14, lww_at = ?15, lww_device = ?16
                """,
                StoreRows.billValues(bill.content) + [
                    .text(userID), .text(m.id), .integer(bill.createdAt), .integer(now), .integer(bill.version),
                    .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        case .tombstone(let version):
            position = try takeChangePosition(ctx, userID: userID)
            // Tombstones are outside the uniqueness index.
            _ = try c.run(
                """
                INSERT INTO bills (provider, subscriber_no, period, consumption_milli_m3, amount_minor, currency, due_date,
                    paid_at, user_id, id, created_at, updated_at, version, deleted, change_position, lww_at, lww_device)
                VALUES ('', '', '', 0, 0, 'TRY', '', NULL, ?1, ?2, ?3, ?3, ?4, 1, ?5, ?6, ?7)
                ON CONFLICT (user_id, id) DO UPDATE SET updated_at = ?3, version = ?4, deleted = 1,
                    change_position = ?5, lww_at = ?6, lww_device = ?7
                """,
                [
                    .text(userID), .text(m.id), .integer(now), .integer(version), .integer(position),
                    .integer(m.clientUpdatedAt), .text(deviceID),
                ])
        }
        return SyncPush.applied(step, collection: "bills", id: m.id, position: position, now: now, wrap: SyncDocument.bill)
    }

    /// A `days` mutation (id = the local date): last-write-wins replacement of the day's
    /// context, decided by `SyncPush.day`; a delete clears the context (a `PUT` of `{}`), so
    /// the day document stays, with both fields null. The day's goal, streaks and badges
    /// are recomputed in the same transaction, as for the REST write.
    func applyDayMutation(
        _ ctx: WriteContext, userID: String, deviceID: String, now: Int64,
        _ m: SyncMutation
    ) throws -> SyncMutationOutcome {
        let c = ctx.connection
        let date: LocalDate
        let content: DayContextContent
        switch SyncPush.dayTarget(m) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let target): (date, content) = target
        }
        guard let profile = try SQLiteStore.loadProfile(c, userID: userID) else { throw RepositoryError.notFound }
        let stored = try c.query(
            "SELECT \(StoreRows.dayColumns), lww_at, lww_device FROM days WHERE user_id = ? AND local_date = ?",
            [.text(userID), .text(date.description)]
        ).first.map { row in
            Stamped(StoreRows.day(row), stamp: StoreRows.stamp(row))
        }
        let step = SyncPush.day(
            date: date, content: content, stored: stored,
            stamp: WriteStamp(at: m.clientUpdatedAt, device: deviceID), now: now)
        guard case .upsert(let day) = step else {
            // An answer, or a retried push that changes nothing (spec §5): no write, no recompute.
            let stored = try c.scalarInt64(
                "SELECT change_position FROM days WHERE user_id = ? AND local_date = ?",
                [.text(userID), .text(date.description)])
            return SyncPush.applied(
                step, collection: "days", id: date.description, position: stored ?? 0, now: now,
                wrap: SyncDocument.day)
        }
        let position = try takeChangePosition(ctx, userID: userID)
        _ = try c.run(
            """
            INSERT INTO days (user_id, local_date, max_temperature_c, active_minutes, created_at, updated_at, version,
                change_position, lww_at, lww_device)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            ON CONFLICT (user_id, local_date) DO UPDATE SET max_temperature_c = ?3, active_minutes = ?4,
                updated_at = ?6, version = ?7, change_position = ?8, lww_at = ?9, lww_device = ?10
            """,
            [
                .text(userID), .text(date.description), content.maxTemperatureC.map(SQLValue.real) ?? .null,
                content.activeMinutes.map { .integer(Int64($0)) } ?? .null, .integer(day.createdAt), .integer(now),
                .integer(day.version), .integer(position), .integer(m.clientUpdatedAt), .text(deviceID),
            ])
        // The day's goal changed: goal days, streaks and badges as for PUT …/days/{date}.
        try SQLiteStore.recomputeDays(
            c, userID: userID, profile: profile,
            clock: ZoneClocks.shared.clock(profile.timezone), dates: [date], now: now)
        return SyncPush.applied(
            step, collection: "days", id: date.description, position: position, now: now,
            wrap: SyncDocument.day)
    }
}
