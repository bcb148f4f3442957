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

    /// The day's entries, the amounts before it, its context and the achievements in one
    /// snapshot (one round trip on PostgreSQL); the amounts before the day are read even when
    /// the day alone names three (a cheap indexed read, cheaper than a second round trip).
    public func daySummary(userID: String, date: LocalDate, range: Range<Int64>) throws -> DaySummaryData {
        let results = try snapshotPipeline([
            SQLStatement(DayStatements.entriesSQL, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]),
            SQLStatement(
                DaySQL.amountsBefore,
                [.text(userID), .integer(range.lowerBound), .integer(Int64(DayStatements.recentAmountsWindow))]),
            SQLStatement(EntryBookkeeping.contextsSQL, EntryBookkeeping.contextsArgs(userID: userID, from: date, to: date)),
            SQLStatement(EntryBookkeeping.achievementsSQL, [.text(userID)]),
        ])
        let entries = results[0].map(StoreRows.entry)
        var recent: [Int] = []
        for e in entries where !recent.contains(e.content.amountMl) && recent.count < 3 { recent.append(e.content.amountMl) }
        for row in results[1] where recent.count < 3 {
            let amount = Int(row[0].int64 ?? 0)
            if !recent.contains(amount) { recent.append(amount) }
        }
        return DaySummaryData(
            entries: entries, recentAmountsMl: recent, context: EntryBookkeeping.contexts(results[2])[date],
            achievements: EntryBookkeeping.achievements(results[3]))
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
    /// The summary's read of a day's live entries, newest first (served by
    /// `water_entries_list`): binds `?1` user id, `?2` / `?3` the day's range (ms, `[start, end)`).
    /// Rows: `StoreRows.entryColumns`.
    public static let entriesSQL = SQLText(
        """
        SELECT \(StoreRows.entryColumns) FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2 AND logged_at < ?3
        ORDER BY logged_at DESC, id DESC
        """)

    /// How many entries before the day the summary's recent amounts look at (at most).
    static let recentAmountsWindow = 200

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
    static let amountsBefore = SQLText(
        """
        SELECT amount_ml FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at < ?2
        ORDER BY logged_at DESC, id DESC LIMIT ?3
        """)
    static let totals = SQLText(
        """
        SELECT local_date, total_ml, entries_count FROM daily_totals
        WHERE user_id = ?1 AND local_date >= ?2 AND local_date <= ?3
        """)
    static let all = SQLText("SELECT \(StoreRows.dayColumns) FROM days WHERE user_id = ?1 ORDER BY local_date")
}
