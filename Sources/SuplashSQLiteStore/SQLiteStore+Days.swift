import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: HydrationRepository {
    public func putDay(
        userID: String, date: LocalDate, content: DayContextContent, deviceID: String?,
        now: Int64
    ) throws -> (day: DayContext, created: Bool) {
        try write { ctx in
            let c = ctx.connection
            guard let profile = try SQLiteStore.loadProfile(c, userID: userID) else { throw RepositoryError.notFound }
            let existing = try c.query(
                "SELECT created_at, version, lww_at FROM days WHERE user_id = ? AND local_date = ?",
                [.text(userID), .text(date.description)]
            ).first
            let (day, created) = DocumentWrites.putDay(
                date: date, content: content, stored: existing.map { ($0[0].int64 ?? now, $0[1].int64 ?? 0) }, now: now)
            let stamp = DocumentWrites.stamp(
                now: now, stored: existing.map { WriteStamp(at: $0[2].int64 ?? 0, device: "") },
                deviceID: deviceID)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                INSERT INTO days (user_id, local_date, max_temperature_c, active_minutes, created_at, updated_at, version,
                    change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, local_date) DO UPDATE SET
                    max_temperature_c = excluded.max_temperature_c, active_minutes = excluded.active_minutes,
                    updated_at = excluded.updated_at, version = excluded.version,
                    change_position = excluded.change_position, lww_at = excluded.lww_at, lww_device = excluded.lww_device
                """,
                [
                    .text(userID), .text(date.description), content.maxTemperatureC.map(SQLValue.real) ?? .null,
                    content.activeMinutes.map { .integer(Int64($0)) } ?? .null, .integer(day.createdAt), .integer(now),
                    .integer(day.version), .integer(position), .integer(stamp.at), .text(stamp.device),
                ])
            try SQLiteStore.recomputeDays(
                c, userID: userID, profile: profile,
                clock: ZoneClocks.shared.clock(profile.timezone), dates: [date], now: now)
            return (day, created)
        }
    }

    /// The summary's day read; public to the tests, which check its query plan.
    public static let dayEntriesSQL = """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ? AND deleted = 0 AND logged_at >= ? AND logged_at < ?
        ORDER BY logged_at DESC, id DESC
        """

    /// How many entries before the day `recentAmountsMl` looks at (at most).
    static let recentAmountsWindow = 200

    public func daySummary(userID: String, date: LocalDate, range: Range<Int64>) throws -> DaySummaryData {
        try read { c in
            let entries = try c.query(
                SQLiteStore.dayEntriesSQL,
                [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]
            )
            .map(StoreRows.entry)
            var recent: [Int] = []
            for e in entries where !recent.contains(e.content.amountMl) && recent.count < 3 { recent.append(e.content.amountMl) }
            if recent.count < 3 {
                for row in try c.query(
                    """
                    SELECT amount_ml FROM water_entries
                    WHERE user_id = ? AND deleted = 0 AND logged_at < ?
                    ORDER BY logged_at DESC, id DESC LIMIT ?
                    """, [.text(userID), .integer(range.lowerBound), .integer(Int64(SQLiteStore.recentAmountsWindow))])
                {
                    let amount = Int(row[0].int64 ?? 0)
                    if !recent.contains(amount) { recent.append(amount) }
                    if recent.count == 3 { break }
                }
            }
            let context = try SQLiteStore.loadContexts(c, userID: userID, from: date, to: date)[date]
            return DaySummaryData(
                entries: entries, recentAmountsMl: recent, context: context,
                achievements: try SQLiteStore.loadAchievements(c, userID: userID))
        }
    }

    public func dayFigures(userID: String, from: LocalDate, to: LocalDate) throws
        -> (totals: [LocalDate: DayTotal], contexts: [LocalDate: DayContextContent])
    {
        try read { c in
            var totals: [LocalDate: DayTotal] = [:]
            for row in try c.query(
                """
                SELECT local_date, total_ml, entries_count FROM daily_totals
                WHERE user_id = ? AND local_date >= ? AND local_date <= ?
                """, [.text(userID), .text(from.description), .text(to.description)])
            {
                guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
                totals[d] = DayTotal(date: d, totalMl: Int(row[1].int64 ?? 0), entriesCount: Int(row[2].int64 ?? 0))
            }
            return (totals, try SQLiteStore.loadContexts(c, userID: userID, from: from, to: to))
        }
    }

    public func achievements(userID: String) throws -> Achievements {
        try read { c in try SQLiteStore.loadAchievements(c, userID: userID) }
    }

    /// Every day document of the user, oldest first.
    static func loadDays(_ c: SQLiteConnection, userID: String) throws -> [DayContext] {
        try c.query(
            """
            SELECT local_date, max_temperature_c, active_minutes, created_at, updated_at, version FROM days
            WHERE user_id = ? ORDER BY local_date
            """, [.text(userID)]
        ).compactMap { row in
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { return nil }
            return DayContext(
                date: d,
                content: DayContextContent(
                    maxTemperatureC: row[1].double,
                    activeMinutes: row[2].int64.map { Int($0) }),
                createdAt: row[3].int64 ?? 0, updatedAt: row[4].int64 ?? 0, version: row[5].int64 ?? 1)
        }
    }
}
