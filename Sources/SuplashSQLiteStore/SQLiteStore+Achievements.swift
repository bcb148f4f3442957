import SuplashDomain
import SuplashStorage
import SuplashStoreRows

/// Keeps `daily_totals` and `achievements` current inside the writer transaction of the
/// write that changes them (spec §4 achievements). Only the touched days and the streak
/// runs through them are read; the whole history is read only when the profile's goal or
/// time zone changes.
///
/// Written once for both engines as `EntryBookkeeping` (SuplashStoreCore); this copy is left
/// for the callers not yet written once (sync push, profile writes, the export).
extension SQLiteStore {
    /// THE hook for entry writes: call it inside the writer transaction after inserting,
    /// updating or deleting entries of `userID`, with each entry version that appeared (+1)
    /// or disappeared (−1; an update is both). Updates those local days' totals in O(1) per
    /// day — never by re-reading the day's entries — then streaks, badges and totals, and
    /// stamps a new achievements version + change position when anything changed. Used by
    /// REST entry writes, batches and sync pushes.
    public static func entriesChanged(_ c: SQLiteConnection, userID: String, deltas: [EntryDelta], now: Int64) throws {
        guard !deltas.isEmpty, let profile = try loadProfile(c, userID: userID) else { return }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        let byDay = DailyTotals.byDay(deltas, clock: clock)
        try recomputeDays(
            c, userID: userID, profile: profile, clock: clock, dates: Set(byDay.keys), now: now,
            deltas: byDay, watchWritten: DailyTotals.watchWritten(deltas))
    }

    /// The hook for profile writes: when the time zone changed, re-buckets every live entry
    /// into local days of the new zone; when the base goal changed, re-evaluates every
    /// day's goal. Then recomputes the achievements (badges are kept).
    public static func profileChanged(_ c: SQLiteConnection, previous: UserProfile, current: UserProfile, now: Int64) throws {
        let zoneChanged = previous.timezone != current.timezone
        let goalChanged = HydrationRules.baseGoalMl(previous) != HydrationRules.baseGoalMl(current)
        guard zoneChanged || goalChanged else { return }
        let userID = current.id
        let clock = ZoneClocks.shared.clock(current.timezone)
        let base = HydrationRules.baseGoalMl(current)
        let contexts = try loadContexts(c, userID: userID, from: nil, to: nil)
        if zoneChanged {
            var totals: [LocalDate: (Int, Int)] = [:]
            for row in try c.query(
                "SELECT logged_at, amount_ml FROM water_entries WHERE user_id = ? AND deleted = 0",
                [.text(userID)])
            {
                let day = clock.localDate(of: row[0].int64 ?? 0)
                let t = totals[day] ?? (0, 0)
                totals[day] = (t.0 + Int(row[1].int64 ?? 0), t.1 + 1)
            }
            _ = try c.run("DELETE FROM daily_totals WHERE user_id = ?", [.text(userID)])
            for (day, t) in totals {
                let met = t.0 >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                _ = try c.run(
                    """
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?, ?, ?, ?, ?)
                    """,
                    [
                        .text(userID), .text(day.description), .integer(Int64(t.0)), .integer(Int64(t.1)),
                        .integer(met ? 1 : 0),
                    ])
            }
        } else {
            for row in try c.query(
                "SELECT local_date, total_ml, goal_met FROM daily_totals WHERE user_id = ?",
                [.text(userID)])
            {
                guard let text = row[0].text, let day = LocalDate(parsing: text) else { continue }
                let met = Int(row[1].int64 ?? 0) >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                if met != ((row[2].int64 ?? 0) != 0) {
                    _ = try c.run(
                        "UPDATE daily_totals SET goal_met = ? WHERE user_id = ? AND local_date = ?",
                        [.integer(met ? 1 : 0), .text(userID), .text(text)])
                }
            }
        }
        let before = try loadAchievements(c, userID: userID)
        let sums = try c.query(
            """
            SELECT COALESCE(SUM(total_ml), 0), COALESCE(SUM(goal_met), 0) FROM daily_totals WHERE user_id = ?
            """, [.text(userID)])
        let step = try StreakBook.rebuild(
            before, totalMl: sums.first?[0].int64 ?? 0,
            daysGoalMet: Int(sums.first?[1].int64 ?? 0),
            goalDays: GoalDays(connection: c, userID: userID), now: now)
        try saveAchievements(c, userID: userID, before: before, after: step.state, now: now)
    }

    /// Recomputes the totals of `dates` and everything that depends on them.
    /// With `deltas` (entry writes) a day's new total is its stored total plus the delta;
    /// without (day-context writes) the day's entries are summed from the index.
    static func recomputeDays(
        _ c: SQLiteConnection, userID: String, profile: UserProfile, clock: ZoneClock,
        dates: Set<LocalDate>, now: Int64, deltas: [LocalDate: (ml: Int, count: Int)]? = nil,
        watchWritten: Bool = false
    ) throws {
        let before = try loadAchievements(c, userID: userID)
        let base = HydrationRules.baseGoalMl(profile)
        var changes: [DayTotalChange] = []
        var anyWatch = watchWritten
        for date in dates.sorted() {
            let old = try c.query(
                """
                SELECT total_ml, entries_count, goal_met FROM daily_totals WHERE user_id = ? AND local_date = ?
                """, [.text(userID), .text(date.description)]
            ).first.map {
                DayTotalRow(
                    totalMl: Int($0[0].int64 ?? 0), entriesCount: Int($0[1].int64 ?? 0),
                    goalMet: ($0[2].int64 ?? 0) != 0)
            }
            var total = 0
            var count = 0
            if let delta = deltas?[date] {
                (total, count) = DailyTotals.apply(total: old?.totalMl ?? 0, count: old?.entriesCount ?? 0, delta: delta)
            } else {
                let range = clock.dayRange(date)
                let sums = try c.query(
                    """
                    SELECT COALESCE(SUM(amount_ml), 0), COUNT(*), COALESCE(MAX(source = 'watch'), 0) FROM water_entries
                    WHERE user_id = ? AND deleted = 0 AND logged_at >= ? AND logged_at < ?
                    """, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]
                ).first
                total = Int(sums?[0].int64 ?? 0)
                count = Int(sums?[1].int64 ?? 0)
                if (sums?[2].int64 ?? 0) != 0 { anyWatch = true }
            }
            let context = try loadContexts(c, userID: userID, from: date, to: date)[date]
            let row = StreakBook.dayRow(
                totalMl: total, entriesCount: count,
                goalMl: HydrationRules.dayGoalMl(baseGoalMl: base, context: context))
            if let row {
                _ = try c.run(
                    """
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, local_date) DO UPDATE SET
                        total_ml = excluded.total_ml, entries_count = excluded.entries_count, goal_met = excluded.goal_met
                    """,
                    [
                        .text(userID), .text(date.description), .integer(Int64(row.totalMl)),
                        .integer(Int64(row.entriesCount)), .integer(row.goalMet ? 1 : 0),
                    ])
            } else {
                _ = try c.run(
                    "DELETE FROM daily_totals WHERE user_id = ? AND local_date = ?",
                    [.text(userID), .text(date.description)])
            }
            changes.append(DayTotalChange(date: date, before: old, after: row))
        }
        let step = try StreakBook.apply(
            before, changes: changes, anyWatchEntry: anyWatch,
            goalDays: GoalDays(connection: c, userID: userID), now: now)
        try saveAchievements(c, userID: userID, before: before, after: step.state, now: now)
    }

    /// The user's goal days for `StreakBook`, read inside the write transaction through the
    /// goal-day index of `daily_totals`.
    struct GoalDays: GoalDayIndex {
        let connection: SQLiteConnection
        let userID: String

        func goalDays(from: LocalDate, descending: Bool, limit: Int) throws -> [LocalDate] {
            let sql =
                descending
                ? "SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 AND local_date <= ? ORDER BY local_date DESC LIMIT ?"
                : "SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 AND local_date >= ? ORDER BY local_date ASC LIMIT ?"
            return try connection.query(sql, [.text(userID), .text(from.description), .integer(Int64(limit))])
                .lazy.map { $0[0].text.flatMap(LocalDate.init(parsing:)) }.prefix { $0 != nil }.compactMap { $0 }
        }

        func latestGoalDay() throws -> LocalDate? {
            try connection.query(
                """
                SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 ORDER BY local_date DESC LIMIT 1
                """, [.text(userID)]
            ).first?[0].text.flatMap(LocalDate.init(parsing:))
        }

        func allGoalDays() throws -> [LocalDate] {
            try connection.query(
                "SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1",
                [.text(userID)]
            ).compactMap { $0[0].text.flatMap(LocalDate.init(parsing:)) }
        }
    }

    static func loadProfile(_ c: SQLiteConnection, userID: String) throws -> UserProfile? {
        try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE id = ?", [.text(userID)]).first.map { StoreRows.user($0).profile }
    }

    /// Day contexts of `[from, to]` (nil = unbounded).
    static func loadContexts(_ c: SQLiteConnection, userID: String, from: LocalDate?, to: LocalDate?) throws
        -> [LocalDate: DayContextContent]
    {
        var out: [LocalDate: DayContextContent] = [:]
        for row in try c.query(
            """
            SELECT local_date, max_temperature_c, active_minutes FROM days
            WHERE user_id = ? AND local_date >= ? AND local_date <= ?
            """, [.text(userID), .text(from?.description ?? ""), .text(to?.description ?? "9999-99-99")])
        {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            out[d] = DayContextContent(maxTemperatureC: row[1].double, activeMinutes: row[2].int64.map { Int($0) })
        }
        return out
    }

    static func loadAchievements(_ c: SQLiteConnection, userID: String) throws -> Achievements {
        guard
            let row = try c.query(
                """
                SELECT latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met, badges, updated_at, version
                FROM achievements WHERE user_id = ?
                """, [.text(userID)]
            ).first
        else { return Achievements() }
        return Achievements(
            latestRunEnd: row[0].text.flatMap(LocalDate.init(parsing:)), latestRunLength: Int(row[1].int64 ?? 0),
            longestStreakDays: Int(row[2].int64 ?? 0), totalMl: row[3].int64 ?? 0, daysGoalMet: Int(row[4].int64 ?? 0),
            badges: StoreRows.badges(row[5].text ?? ""), updatedAt: row[6].int64 ?? 0, version: row[7].int64 ?? 0)
    }

    /// Writes `after` with version + 1 and a new change position when it differs from `before`.
    static func saveAchievements(
        _ c: SQLiteConnection, userID: String, before: Achievements, after: Achievements,
        now: Int64
    ) throws {
        guard StreakBook.changed(from: before, to: after) else { return }
        let position = try nextChangePosition(c)
        let badges = StoreRows.badgesText(after.badges)
        _ = try c.run(
            """
            INSERT INTO achievements (user_id, latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met,
                badges, updated_at, version, change_position)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user_id) DO UPDATE SET
                latest_run_end = excluded.latest_run_end, latest_run_length = excluded.latest_run_length,
                longest_streak = excluded.longest_streak, total_ml = excluded.total_ml,
                days_goal_met = excluded.days_goal_met, badges = excluded.badges, updated_at = excluded.updated_at,
                version = excluded.version, change_position = excluded.change_position
            """,
            [
                .text(userID), after.latestRunEnd.map { .text($0.description) } ?? .null,
                .integer(Int64(after.latestRunLength)), .integer(Int64(after.longestStreakDays)), .integer(after.totalMl),
                .integer(Int64(after.daysGoalMet)), .text(badges), .integer(now), .integer(before.version + 1),
                .integer(position),
            ])
    }
}
