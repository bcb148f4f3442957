import SuplashDomain
import SuplashStorage

/// Keeps `daily_totals` and `achievements` current inside the writer transaction of the
/// write that changes them (spec §4 achievements). Only the touched days and the streak
/// runs through them are read; the whole history is read only when the profile's goal or
/// time zone changes.
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
        try recomputeDays(c, userID: userID, profile: profile, clock: clock, dates: Set(byDay.keys), now: now,
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
            for row in try c.query("SELECT logged_at, amount_ml FROM water_entries WHERE user_id = ? AND deleted = 0",
                                   [.text(userID)]) {
                let day = clock.localDate(of: row[0].int64 ?? 0)
                let t = totals[day] ?? (0, 0)
                totals[day] = (t.0 + Int(row[1].int64 ?? 0), t.1 + 1)
            }
            _ = try c.run("DELETE FROM daily_totals WHERE user_id = ?", [.text(userID)])
            for (day, t) in totals {
                let met = t.0 >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                _ = try c.run("""
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?, ?, ?, ?, ?)
                    """, [.text(userID), .text(day.description), .integer(Int64(t.0)), .integer(Int64(t.1)),
                          .integer(met ? 1 : 0)])
            }
        } else {
            for row in try c.query("SELECT local_date, total_ml, goal_met FROM daily_totals WHERE user_id = ?",
                                   [.text(userID)]) {
                guard let text = row[0].text, let day = LocalDate(parsing: text) else { continue }
                let met = Int(row[1].int64 ?? 0) >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                if met != ((row[2].int64 ?? 0) != 0) {
                    _ = try c.run("UPDATE daily_totals SET goal_met = ? WHERE user_id = ? AND local_date = ?",
                                  [.integer(met ? 1 : 0), .text(userID), .text(text)])
                }
            }
        }
        let before = try loadAchievements(c, userID: userID)
        var state = before
        let sums = try c.query("""
            SELECT COALESCE(SUM(total_ml), 0), COALESCE(SUM(goal_met), 0) FROM daily_totals WHERE user_id = ?
            """, [.text(userID)])
        state.totalMl = sums.first?[0].int64 ?? 0
        state.daysGoalMet = Int(sums.first?[1].int64 ?? 0)
        (state.latestRunEnd, state.latestRunLength) = try latestRun(c, userID: userID)
        state.longestStreakDays = try longestRun(c, userID: userID)
        state.badges = StreakRules.award(
            StreakRules.qualifyingBadges(longestStreakDays: state.longestStreakDays, totalMl: state.totalMl,
                                         daysGoalMet: state.daysGoalMet, anyEntry: state.totalMl > 0, anyWatchEntry: false),
            to: state.badges, now: now)
        try saveAchievements(c, userID: userID, before: before, after: state, now: now)
    }

    /// Recomputes the totals of `dates` and everything that depends on them.
    /// With `deltas` (entry writes) a day's new total is its stored total plus the delta;
    /// without (day-context writes) the day's entries are summed from the index.
    static func recomputeDays(_ c: SQLiteConnection, userID: String, profile: UserProfile, clock: ZoneClock,
                              dates: Set<LocalDate>, now: Int64, deltas: [LocalDate: (ml: Int, count: Int)]? = nil,
                              watchWritten: Bool = false) throws {
        let before = try loadAchievements(c, userID: userID)
        var state = before
        let base = HydrationRules.baseGoalMl(profile)
        var becameMet: [LocalDate] = []
        var becameUnmet: [LocalDate] = []
        var anyEntry = false
        var anyWatch = watchWritten
        for date in dates.sorted() {
            let old = try c.query("""
                SELECT total_ml, entries_count, goal_met FROM daily_totals WHERE user_id = ? AND local_date = ?
                """, [.text(userID), .text(date.description)]).first
            let oldTotal = Int(old?[0].int64 ?? 0)
            let oldCount = Int(old?[1].int64 ?? 0)
            let oldMet = (old?[2].int64 ?? 0) != 0
            var total = 0
            var count = 0
            if let delta = deltas?[date] {
                (total, count) = DailyTotals.apply(total: oldTotal, count: oldCount, delta: delta)
            } else {
                let range = clock.dayRange(date)
                let sums = try c.query("""
                    SELECT COALESCE(SUM(amount_ml), 0), COUNT(*), COALESCE(MAX(source = 'watch'), 0) FROM water_entries
                    WHERE user_id = ? AND deleted = 0 AND logged_at >= ? AND logged_at < ?
                    """, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]).first
                total = Int(sums?[0].int64 ?? 0)
                count = Int(sums?[1].int64 ?? 0)
                if (sums?[2].int64 ?? 0) != 0 { anyWatch = true }
            }
            anyEntry = anyEntry || count > 0
            let context = try loadContexts(c, userID: userID, from: date, to: date)[date]
            let met = count > 0 && total >= HydrationRules.dayGoalMl(baseGoalMl: base, context: context)
            if count == 0 {
                _ = try c.run("DELETE FROM daily_totals WHERE user_id = ? AND local_date = ?",
                              [.text(userID), .text(date.description)])
            } else {
                _ = try c.run("""
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, local_date) DO UPDATE SET
                        total_ml = excluded.total_ml, entries_count = excluded.entries_count, goal_met = excluded.goal_met
                    """, [.text(userID), .text(date.description), .integer(Int64(total)), .integer(Int64(count)),
                          .integer(met ? 1 : 0)])
            }
            state.totalMl += Int64(total - oldTotal)
            if met != oldMet {
                state.daysGoalMet += met ? 1 : -1
                if met { becameMet.append(date) } else { becameUnmet.append(date) }
            }
        }
        if !becameMet.isEmpty || !becameUnmet.isEmpty {
            (state.latestRunEnd, state.latestRunLength) = try latestRun(c, userID: userID)
            var rescan = becameUnmet.count > 1
            if let d = becameUnmet.first, !rescan {
                // The run this day belonged to, as it was: if it may have been the longest,
                // the longest must be found again (rare: a goal day lost).
                let oldRun = try walk(c, userID: userID, from: d.adding(days: -1), descending: true) + 1
                    + (try walk(c, userID: userID, from: d.adding(days: 1), descending: false))
                rescan = oldRun >= state.longestStreakDays
            }
            if rescan {
                state.longestStreakDays = try longestRun(c, userID: userID)
            }
            for d in becameMet {
                let run = try walk(c, userID: userID, from: d, descending: true)
                    + (try walk(c, userID: userID, from: d.adding(days: 1), descending: false))
                state.longestStreakDays = max(state.longestStreakDays, run)
            }
            state.longestStreakDays = max(state.longestStreakDays, state.latestRunLength)
        }
        state.badges = StreakRules.award(
            StreakRules.qualifyingBadges(longestStreakDays: state.longestStreakDays, totalMl: state.totalMl,
                                         daysGoalMet: state.daysGoalMet, anyEntry: anyEntry, anyWatchEntry: anyWatch),
            to: state.badges, now: now)
        try saveAchievements(c, userID: userID, before: before, after: state, now: now)
    }

    /// Counts consecutive goal days starting at `from` (inclusive), going back or forward.
    static func walk(_ c: SQLiteConnection, userID: String, from: LocalDate, descending: Bool) throws -> Int {
        let chunk = 64
        var expected = from.dayNumber
        var count = 0
        while true {
            let sql = descending
                ? "SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 AND local_date <= ? ORDER BY local_date DESC LIMIT ?"
                : "SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 AND local_date >= ? ORDER BY local_date ASC LIMIT ?"
            let rows = try c.query(sql, [.text(userID), .text(LocalDate(dayNumber: expected).description), .integer(Int64(chunk))])
            for row in rows {
                guard let d = row[0].text.flatMap(LocalDate.init(parsing:)), d.dayNumber == expected else { return count }
                count += 1
                expected += descending ? -1 : 1
            }
            if rows.count < chunk { return count }
        }
    }

    /// The most recent run of goal days: (last day, length), or (nil, 0).
    static func latestRun(_ c: SQLiteConnection, userID: String) throws -> (LocalDate?, Int) {
        guard let end = try c.query("""
            SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1 ORDER BY local_date DESC LIMIT 1
            """, [.text(userID)]).first?[0].text.flatMap(LocalDate.init(parsing:)) else { return (nil, 0) }
        return (end, try walk(c, userID: userID, from: end, descending: true))
    }

    /// The longest run of goal days (reads every goal day of the user: index only).
    static func longestRun(_ c: SQLiteConnection, userID: String) throws -> Int {
        let days = try c.query("SELECT local_date FROM daily_totals WHERE user_id = ? AND goal_met = 1",
                               [.text(userID)]).compactMap { $0[0].text.flatMap(LocalDate.init(parsing:)) }
        return StreakRules.runs(days).map(\.length).max() ?? 0
    }

    static func loadProfile(_ c: SQLiteConnection, userID: String) throws -> UserProfile? {
        try c.query("SELECT \(userColumns) FROM users WHERE id = ?", [.text(userID)]).first.map { decodeUser($0).profile }
    }

    /// Day contexts of `[from, to]` (nil = unbounded).
    static func loadContexts(_ c: SQLiteConnection, userID: String, from: LocalDate?, to: LocalDate?) throws
        -> [LocalDate: DayContextContent] {
        var out: [LocalDate: DayContextContent] = [:]
        for row in try c.query("""
            SELECT local_date, max_temperature_c, active_minutes FROM days
            WHERE user_id = ? AND local_date >= ? AND local_date <= ?
            """, [.text(userID), .text(from?.description ?? ""), .text(to?.description ?? "9999-99-99")]) {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            out[d] = DayContextContent(maxTemperatureC: row[1].double, activeMinutes: row[2].int64.map { Int($0) })
        }
        return out
    }

    static func loadAchievements(_ c: SQLiteConnection, userID: String) throws -> Achievements {
        guard let row = try c.query("""
            SELECT latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met, badges, updated_at, version
            FROM achievements WHERE user_id = ?
            """, [.text(userID)]).first else { return Achievements() }
        return Achievements(
            latestRunEnd: row[0].text.flatMap(LocalDate.init(parsing:)), latestRunLength: Int(row[1].int64 ?? 0),
            longestStreakDays: Int(row[2].int64 ?? 0), totalMl: row[3].int64 ?? 0, daysGoalMet: Int(row[4].int64 ?? 0),
            badges: decodeBadges(row[5].text ?? ""), updatedAt: row[6].int64 ?? 0, version: row[7].int64 ?? 0)
    }

    static func decodeBadges(_ text: String) -> [EarnedBadge] {
        // Split on UTF-8 bytes: Character-wise `split` was ~10% of a create's instructions.
        text.utf8.split(separator: UInt8(ascii: ",")).compactMap { item in
            let parts = item.split(separator: UInt8(ascii: ":"))
            guard parts.count == 2, let badge = Badge(rawValue: String(Substring(parts[0]))),
                  let at = Int64(Substring(parts[1])) else { return nil }
            return EarnedBadge(badge: badge, earnedAt: at)
        }
    }

    /// Writes `after` with version + 1 and a new change position when it differs from `before`.
    static func saveAchievements(_ c: SQLiteConnection, userID: String, before: Achievements, after: Achievements,
                                 now: Int64) throws {
        var next = after
        next.updatedAt = before.updatedAt
        next.version = before.version
        guard next != before else { return }
        let position = try nextChangePosition(c)
        let badges = after.badges.map { "\($0.badge.rawValue):\($0.earnedAt)" }.joined(separator: ",")
        _ = try c.run("""
            INSERT INTO achievements (user_id, latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met,
                badges, updated_at, version, change_position)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user_id) DO UPDATE SET
                latest_run_end = excluded.latest_run_end, latest_run_length = excluded.latest_run_length,
                longest_streak = excluded.longest_streak, total_ml = excluded.total_ml,
                days_goal_met = excluded.days_goal_met, badges = excluded.badges, updated_at = excluded.updated_at,
                version = excluded.version, change_position = excluded.change_position
            """, [
                .text(userID), after.latestRunEnd.map { .text($0.description) } ?? .null,
                .integer(Int64(after.latestRunLength)), .integer(Int64(after.longestStreakDays)), .integer(after.totalMl),
                .integer(Int64(after.daysGoalMet)), .text(badges), .integer(now), .integer(before.version + 1),
                .integer(position),
            ])
    }
}
