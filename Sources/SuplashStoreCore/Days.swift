import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Days (spec §4, REST `/v1/days`): a local day's context, written under the user's lock with
/// its change position and followed by the day's recompute (`EntryBookkeeping.daysChanged`);
/// the summary and figures reads, each in one snapshot (one round trip on PostgreSQL).
extension HydrationRepository where Self: SQLStore {
    public func putDay(
        userID: String, date: LocalDate, content: DayContextContent, deviceID: String?, now: Int64
    ) throws -> (day: DayContext, created: Bool) {
        try transaction { tx in
            tx.writerDeviceID = deviceID
            // The user's lock first (writers of one user queue there), then the day.
            let reads = try tx.pipeline([
                SQLStatement(UserLock.statement, [.text(userID)]),
                SQLStatement(DaySQL.stored, [.text(userID), .text(date.description)]),
            ])
            guard let profile = reads[0].first.map({ StoreRows.user($0).profile }) else { throw RepositoryError.notFound }
            let existing = reads[1].first
            let (day, created) = DocumentWrites.putDay(
                date: date, content: content, stored: existing.map { ($0[0].int64 ?? now, $0[1].int64 ?? 0) }, now: now)
            let stamp = DocumentWrites.stamp(
                now: now, stored: existing.map { WriteStamp(at: $0[2].int64 ?? 0, device: "") }, deviceID: deviceID)
            // Written now (not at the commit): the recompute reads the day's context again.
            let position = try tx.changePosition(of: .day(userID, date), userID: userID)
            try tx.enqueue(
                DaySQL.upsert,
                [
                    .text(userID), .text(date.description), content.maxTemperatureC.map(SQLValue.real) ?? .null,
                    content.activeMinutes.map { .integer(Int64($0)) } ?? .null, .integer(day.createdAt), .integer(now),
                    .integer(day.version), .integer(position), .integer(stamp.at), .text(stamp.device),
                ])
            try EntryBookkeeping.daysChanged(tx, userID: userID, profile: profile, dates: [date], now: now)
            return (day, created)
        }
    }

    /// The day's totals row, its three newest entries, the recent amounts (`EntryAmounts`), its
    /// context and the achievements in one snapshot (one round trip on PostgreSQL); each read is
    /// bounded whatever the day's size.
    public func daySummary(userID: String, date: LocalDate, range: Range<Int64>) throws -> DaySummaryData {
        let user = SQLValue.text(userID)
        let results = try snapshotPipeline([
            SQLStatement(BookkeepingSQL.dayTotals, [user, .text(date.description)]),
            SQLStatement(DayStatements.entriesSQL, [user, .integer(range.lowerBound), .integer(range.upperBound)]),
            SQLStatement(
                EntryAmounts.recentSQL,
                [
                    user, .integer(range.lowerBound), .integer(range.upperBound),
                    .integer(Int64(DayStatements.recentAmountsWindow - 1)), .integer(Int64.min),
                ]),
            SQLStatement(EntryBookkeeping.contextsSQL, EntryBookkeeping.contextsArgs(userID: userID, from: date, to: date)),
            SQLStatement(EntryBookkeeping.achievementsSQL, [user]),
        ])
        let totals = results[0].first
        return DaySummaryData(
            lastEntries: results[1].map(StoreRows.entry), totalMl: Int(totals?[0].int64 ?? 0),
            entriesCount: Int(totals?[1].int64 ?? 0), recentAmountsMl: results[2].map { Int($0[0].int64 ?? 0) },
            context: EntryBookkeeping.contexts(results[3])[date], achievements: EntryBookkeeping.achievements(results[4]))
    }

    /// The totals and contexts of `[from, to]` in one snapshot (one round trip on PostgreSQL).
    public func dayFigures(userID: String, from: LocalDate, to: LocalDate) throws
        -> (totals: [LocalDate: DayTotal], contexts: [LocalDate: DayContextContent])
    {
        let results = try snapshotPipeline([
            SQLStatement(DaySQL.totals, [.text(userID), .text(from.description), .text(to.description)]),
            SQLStatement(EntryBookkeeping.contextsSQL, EntryBookkeeping.contextsArgs(userID: userID, from: from, to: to)),
        ])
        var totals: [LocalDate: DayTotal] = [:]
        for row in results[0] {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            totals[d] = DayTotal(date: d, totalMl: Int(row[1].int64 ?? 0), entriesCount: Int(row[2].int64 ?? 0))
        }
        return (totals, EntryBookkeeping.contexts(results[1]))
    }

    public func achievements(userID: String) throws -> Achievements {
        try reading { c in EntryBookkeeping.achievements(try c.query(EntryBookkeeping.achievementsSQL, [.text(userID)])) }
    }
}

/// Day statements other use cases share (the account export, query-plan tests).
public enum DayStatements {
    /// The summary's read of a day's three newest live entries, newest first (served by
    /// `water_entries_list`, which gives the order): binds `?1` user id, `?2` / `?3` the day's
    /// range (ms, `[start, end)`). Rows: `StoreRows.entryColumns`.
    public static let entriesSQL = SQLText(
        """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2 AND logged_at < ?3
        ORDER BY logged_at DESC, id DESC LIMIT 3
        """)

    /// How many live entries before the day the summary's recent amounts look back over (an
    /// amount whose newest entry is older does not count; `EntryAmounts.recentSQL`).
    public static let recentAmountsWindow = 200

    /// Every day document of `userID`, oldest first, read on `c`.
    /// - Throws: the engine's error.
    public static func all(_ c: some SQLExecutor, userID: String) throws -> [DayContext] {
        try c.query(DaySQL.all, [.text(userID)]).compactMap { row in
            row["local_date"].text.flatMap(LocalDate.init(parsing:)) == nil ? nil : StoreRows.day(row)
        }
    }
}

enum DaySQL {
    static let stored = SQLText("SELECT created_at, version, lww_at FROM days WHERE user_id = ?1 AND local_date = ?2")
    static let upsert = SQLText(
        """
        INSERT INTO days (user_id, local_date, max_temperature_c, active_minutes, created_at, updated_at, version,
            change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        ON CONFLICT (user_id, local_date) DO UPDATE SET
            max_temperature_c = excluded.max_temperature_c, active_minutes = excluded.active_minutes,
            updated_at = excluded.updated_at, version = excluded.version,
            change_position = excluded.change_position, lww_at = excluded.lww_at, lww_device = excluded.lww_device
        """)
    static let totals = SQLText(
        """
        SELECT local_date, total_ml, entries_count FROM daily_totals
        WHERE user_id = ?1 AND local_date >= ?2 AND local_date <= ?3
        """)
    static let all = SQLText("SELECT \(StoreRows.dayColumns) FROM days WHERE user_id = ?1 ORDER BY local_date")
}
