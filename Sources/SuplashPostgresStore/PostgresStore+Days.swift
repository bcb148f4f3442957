import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreRows

extension PostgresStore: HydrationRepository {
    public func putDay(
        userID: String, date: LocalDate, content: DayContextContent, deviceID: String?,
        now: Int64
    ) throws -> (day: DayContext, created: Bool) {
        try write { tx in
            let c = tx.connection
            // The user's row lock first (writers of one user queue there), then the day.
            let reads = try c.pipeline([
                PostgresStore.lockUserStatement(userID),
                PostgresStatement(
                    "SELECT created_at, version, lww_at FROM days WHERE user_id = $1 AND local_date = $2",
                    [.text(userID), .text(date.description)]),
            ])
            guard let profile = reads[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
            let existing = reads[1].first
            let (day, created) = DocumentWrites.putDay(
                date: date, content: content, stored: existing.map { ($0[0].int64 ?? now, $0[1].int64 ?? 0) }, now: now)
            let stamp = DocumentWrites.stamp(
                now: now, stored: existing.map { WriteStamp(at: $0[2].int64 ?? 0, device: "") },
                deviceID: deviceID)
            let position = try self.changePosition(tx, userID: userID, row: ChangeRows.day(userID, date))
            c.enqueue(
                """
                INSERT INTO days (user_id, local_date, max_temperature_c, active_minutes, created_at, updated_at, version,
                    change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
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
            try PostgresStore.recomputeDays(
                tx, userID: userID, profile: profile,
                clock: ZoneClocks.shared.clock(profile.timezone), dates: [date], now: now)
            return (day, created)
        }
    }

    /// The summary's day read (served by `water_entries_list`).
    public static let dayEntriesSQL = """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = $1 AND deleted = 0 AND logged_at >= $2 AND logged_at < $3
        ORDER BY logged_at DESC, id DESC
        """

    /// How many entries before the day `recentAmountsMl` looks at (at most).
    static let recentAmountsWindow = 200

    /// The reads of `daySummary` — the day's entries, the amounts before it, its context
    /// and the achievements — travel in one round trip (`snapshotPipeline`); the amounts
    /// before the day are read even when the day alone names three (a cheap indexed read,
    /// cheaper than a second round trip).
    public func daySummary(userID: String, date: LocalDate, range: Range<Int64>) throws -> DaySummaryData {
        let results = try snapshotPipeline([
            PostgresStatement(PostgresStore.dayEntriesSQL, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]),
            PostgresStatement(
                """
                SELECT amount_ml FROM water_entries
                WHERE user_id = $1 AND deleted = 0 AND logged_at < $2
                ORDER BY logged_at DESC, id DESC LIMIT $3
                """, [.text(userID), .integer(range.lowerBound), .integer(Int64(PostgresStore.recentAmountsWindow))]),
            PostgresStore.contextsStatement(userID: userID, from: date, to: date),
            PostgresStore.achievementsStatement(userID),
        ])
        let entries = results[0].map(StoreRows.entry)
        var recent: [Int] = []
        for e in entries where !recent.contains(e.content.amountMl) && recent.count < 3 { recent.append(e.content.amountMl) }
        if recent.count < 3 {
            for row in results[1] {
                let amount = Int(row[0].int64 ?? 0)
                if !recent.contains(amount) { recent.append(amount) }
                if recent.count == 3 { break }
            }
        }
        return DaySummaryData(
            entries: entries, recentAmountsMl: recent, context: PostgresStore.contexts(results[2])[date],
            achievements: PostgresStore.achievements(results[3]))
    }

    /// Both reads in one round trip (`snapshotPipeline`).
    public func dayFigures(userID: String, from: LocalDate, to: LocalDate) throws
        -> (totals: [LocalDate: DayTotal], contexts: [LocalDate: DayContextContent])
    {
        let results = try snapshotPipeline([
            PostgresStatement(
                """
                SELECT local_date, total_ml, entries_count FROM daily_totals
                WHERE user_id = $1 AND local_date >= $2 AND local_date <= $3
                """, [.text(userID), .text(from.description), .text(to.description)]),
            PostgresStore.contextsStatement(userID: userID, from: from, to: to),
        ])
        var totals: [LocalDate: DayTotal] = [:]
        for row in results[0] {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            totals[d] = DayTotal(date: d, totalMl: Int(row[1].int64 ?? 0), entriesCount: Int(row[2].int64 ?? 0))
        }
        return (totals, PostgresStore.contexts(results[1]))
    }

    public func achievements(userID: String) throws -> Achievements {
        try read { c in try PostgresStore.loadAchievements(c, userID: userID) }
    }

    /// Every day document of the user, oldest first.
    static func loadDays(_ c: PostgresConnection, userID: String) throws -> [DayContext] {
        try c.query(
            """
            SELECT local_date, max_temperature_c, active_minutes, created_at, updated_at, version FROM days
            WHERE user_id = $1 ORDER BY local_date
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
