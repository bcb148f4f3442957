import SuplashDomain
import SuplashSQL

/// The per-hour drinking totals of smart reminders (`drinking_hours`, docs/reminders.md,
/// "Storage"): the adaptive curve's `HourlyDrinking` reads a bounded row set (≤ 24 × 15 rows
/// per user) instead of the entries. Maintained by `EntryBookkeeping` in the transaction of
/// every entry write (REST, batches, sync pushes) and rebuilt when the profile's zone changes;
/// the callers hold the user's lock.
public enum HourlyTotals {
    /// Adds `deltas` (each entry version that appeared or disappeared) to their local hours in
    /// `clock`'s zone and prunes the user's buckets before the kept window. Every statement is
    /// `enqueue`d (no round trip of its own on PostgreSQL).
    /// - Parameter now: ms since the epoch (decides the kept window).
    /// - Throws: the engine's error.
    @inlinable public static func entriesChanged(
        _ tx: some StoreTransaction, userID: String, clock: ZoneClock, deltas: [EntryDelta], now: Int64
    ) throws {
        let today = clock.localDate(of: now)
        let changes = HourlyDrinking.changes(deltas.lazy.map { ($0.loggedAt, $0.amountMl) }, clock: clock, today: today)
        guard !changes.isEmpty else { return }
        for (bucket, ml) in changes {
            try tx.enqueue(
                HourlySQL.add,
                [.text(userID), .text(bucket.date.description), .integer(Int64(bucket.hour)), .integer(Int64(ml))])
        }
        try tx.enqueue(HourlySQL.prune, [.text(userID), .text(HourlyDrinking.firstKeptDay(today: today).description)])
    }

    /// Replaces the user's buckets with those of `live` (every live entry's `loggedAt` / ml),
    /// bucketed in `clock`'s zone (the profile's new zone).
    /// - Throws: the engine's error.
    public static func rebuild(
        _ tx: some StoreTransaction, userID: String, clock: ZoneClock, live: [(loggedAt: Int64, ml: Int)], now: Int64
    ) throws {
        try tx.execute(HourlySQL.deleteAll, [.text(userID)])
        for (bucket, ml) in HourlyDrinking.changes(live, clock: clock, today: clock.localDate(of: now)) {
            try tx.enqueue(
                HourlySQL.add,
                [.text(userID), .text(bucket.date.description), .integer(Int64(bucket.hour)), .integer(Int64(ml))])
        }
    }

    /// The user's buckets from a local day on (`local_date, hour, amount_ml`); binds `?1` = user
    /// id, `?2` = the first `YYYY-MM-DD` (`HourlyDrinking.firstKeptDay(today:)`). Decode with
    /// `drinking(_:today:)`.
    public static let bucketsSQL = SQLText(
        "SELECT local_date, hour, amount_ml FROM drinking_hours WHERE user_id = ?1 AND local_date >= ?2")

    /// The `HourlyDrinking` on `today` of `rows` (of `bucketsSQL`).
    public static func drinking(_ rows: [some SQLRowValues], today: LocalDate) -> HourlyDrinking {
        HourlyDrinking(
            buckets: rows.compactMap { row in
                guard let date = row[0].text.flatMap(LocalDate.init(parsing:)), let hour = row[1].int64 else { return nil }
                return (HourlyDrinking.Bucket(date: date, hour: Int(hour)), Int(row[2].int64 ?? 0))
            }, today: today)
    }
}

@usableFromInline enum HourlySQL {
    @usableFromInline static let add = SQLText(
        """
        INSERT INTO drinking_hours (user_id, local_date, hour, amount_ml) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT (user_id, local_date, hour) DO UPDATE SET amount_ml = drinking_hours.amount_ml + excluded.amount_ml
        """)
    @usableFromInline static let prune = SQLText("DELETE FROM drinking_hours WHERE user_id = ?1 AND local_date < ?2")
    static let deleteAll = SQLText("DELETE FROM drinking_hours WHERE user_id = ?1")
    static let timezone = SQLText("SELECT timezone FROM users WHERE id = ?1")
}

extension ReminderRepository where Self: SQLStore {
    public func hourlyDrinking(userID: String, now: Int64) throws -> HourlyDrinking? {
        try reading { c in
            guard let zone = try c.queryOne(HourlySQL.timezone, [.text(userID)]) else { return nil }
            let today = ZoneClocks.shared.clock(zone[0].text ?? UserProfile.defaultTimezone).localDate(of: now)
            let rows = try c.query(
                HourlyTotals.bucketsSQL, [.text(userID), .text(HourlyDrinking.firstKeptDay(today: today).description)])
            return HourlyTotals.drinking(rows, today: today)
        }
    }
}
