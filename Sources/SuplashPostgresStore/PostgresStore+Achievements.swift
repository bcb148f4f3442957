import SuplashDomain
import SuplashPostgres
import SuplashStoreRows

/// Keeps `daily_totals` and `achievements` current inside the transaction of the write that
/// changes them (spec §4 achievements). The decisions (day rows, streaks, badges) are the
/// domain's `DailyTotals` and `StreakBook`, shared with the SQLite adapter; this file only
/// loads and saves rows. Every caller holds the user's row lock (`lockUser`, or the
/// `FOR UPDATE` of a profile write) before calling, so the recompute of one user's derived
/// rows is serialised across instances, and each READ COMMITTED statement (its snapshot is
/// taken after the lock was granted) sees every earlier writer's committed totals. Only
/// the touched days and the streak runs through them are read — in one round trip — and
/// the writes travel with the next statement (`PostgresConnection.enqueue`); the whole
/// history is read only when the profile's goal or time zone changes.
///
/// Written once for both engines as `EntryBookkeeping` (SuplashStoreCore); this copy is left
/// for the callers not yet written once (sync push, batches, profile writes, the export).
extension PostgresStore {
    /// THE hook for entry writes: call it inside the write transaction after inserting,
    /// updating or deleting entries of `userID`, with each entry version that appeared (+1)
    /// or disappeared (−1; an update is both). Updates those local days' totals in O(1) per
    /// day (`DailyTotals`, shared with the SQLite adapter), then streaks, badges and totals,
    /// and stamps a new achievements version + change position when anything changed.
    /// `profile`: the user's profile when the caller has it (from `lockUser`).
    static func entriesChanged(
        _ tx: PostgresTransaction, userID: String, profile: UserProfile? = nil, deltas: [EntryDelta],
        now: Int64
    ) throws {
        let c = tx.connection
        guard !deltas.isEmpty else { return }
        guard let profile = try profile ?? loadProfile(c, userID: userID) else { return }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        let byDay = DailyTotals.byDay(deltas, clock: clock)
        try recomputeDays(
            tx, userID: userID, profile: profile, clock: clock, dates: Set(byDay.keys), now: now,
            deltas: byDay, watchWritten: DailyTotals.watchWritten(deltas))
    }

    /// Achievements, then per day its totals row, its context and (without a delta) its
    /// live entries.
    static func recomputeReads(
        userID: String, clock: ZoneClock, days: [LocalDate],
        deltas: [LocalDate: (ml: Int, count: Int)]?
    ) -> [PostgresStatement] {
        var reads = [achievementsStatement(userID)]
        for date in days {
            reads.append(
                PostgresStatement(
                    """
                    SELECT total_ml, entries_count, goal_met FROM daily_totals WHERE user_id = $1 AND local_date = $2
                    """, [.text(userID), .text(date.description)]))
            reads.append(contextsStatement(userID: userID, from: date, to: date))
            if deltas?[date] == nil {
                let range = clock.dayRange(date)
                reads.append(
                    PostgresStatement(
                        """
                        SELECT amount_ml, source FROM water_entries
                        WHERE user_id = $1 AND deleted = 0 AND logged_at >= $2 AND logged_at < $3
                        """, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]))
            }
        }
        return reads
    }

    /// The hook for profile writes: when the time zone changed, re-buckets every live entry
    /// into local days of the new zone; when the base goal changed, re-evaluates every
    /// day's goal. Then recomputes the achievements (badges are kept).
    static func profileChanged(_ tx: PostgresTransaction, previous: UserProfile, current: UserProfile, now: Int64) throws {
        let c = tx.connection
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
                "SELECT logged_at, amount_ml FROM water_entries WHERE user_id = $1 AND deleted = 0",
                [.text(userID)])
            {
                let day = clock.localDate(of: row[0].int64 ?? 0)
                let t = totals[day] ?? (0, 0)
                totals[day] = (t.0 + Int(row[1].int64 ?? 0), t.1 + 1)
            }
            try c.update("DELETE FROM daily_totals WHERE user_id = $1", [.text(userID)])
            for (day, t) in totals {
                let met = t.0 >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                try c.update(
                    """
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES ($1, $2, $3, $4, $5)
                    """,
                    [
                        .text(userID), .text(day.description), .integer(Int64(t.0)), .integer(Int64(t.1)),
                        .integer(met ? 1 : 0),
                    ])
            }
        } else {
            for row in try c.query(
                "SELECT local_date, total_ml, goal_met FROM daily_totals WHERE user_id = $1",
                [.text(userID)])
            {
                guard let text = row[0].text, let day = LocalDate(parsing: text) else { continue }
                let met = Int(row[1].int64 ?? 0) >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                if met != ((row[2].int64 ?? 0) != 0) {
                    try c.update(
                        "UPDATE daily_totals SET goal_met = $1 WHERE user_id = $2 AND local_date = $3",
                        [.integer(met ? 1 : 0), .text(userID), .text(text)])
                }
            }
        }
        let before = try loadAchievements(c, userID: userID)
        let sums = try c.query(
            """
            SELECT COALESCE(SUM(total_ml), 0), COALESCE(SUM(goal_met), 0) FROM daily_totals WHERE user_id = $1
            """, [.text(userID)])
        let step = try StreakBook.rebuild(
            before, totalMl: sums.first?[0].int64 ?? 0,
            daysGoalMet: Int(sums.first?[1].int64 ?? 0),
            goalDays: GoalDays(connection: c, userID: userID), now: now)
        try saveAchievements(tx, userID: userID, before: before, after: step.state, now: now)
    }

    /// Recomputes the totals of `dates` and everything that depends on them.
    /// With `deltas` (entry writes) a day's new total is its stored total plus the delta;
    /// without (day-context writes) the day's entries are summed from the index.
    static func recomputeDays(
        _ tx: PostgresTransaction, userID: String, profile: UserProfile, clock: ZoneClock,
        dates: Set<LocalDate>, now: Int64, deltas: [LocalDate: (ml: Int, count: Int)]? = nil,
        watchWritten: Bool = false
    ) throws {
        let c = tx.connection
        let base = HydrationRules.baseGoalMl(profile)
        let days = dates.sorted()
        // Every read in one round trip (`recomputeReads`).
        var results = try c.pipeline(recomputeReads(userID: userID, clock: clock, days: days, deltas: deltas))[...]
        let before = achievements(results.removeFirst())
        var changes: [DayTotalChange] = []
        var anyWatch = watchWritten
        for date in days {
            let old = results.removeFirst().first.map {
                DayTotalRow(
                    totalMl: Int($0[0].int64 ?? 0), entriesCount: Int($0[1].int64 ?? 0),
                    goalMet: ($0[2].int64 ?? 0) != 0)
            }
            let context = contexts(results.removeFirst())[date]
            var total = 0
            var count = 0
            if let delta = deltas?[date] {
                (total, count) = DailyTotals.apply(total: old?.totalMl ?? 0, count: old?.entriesCount ?? 0, delta: delta)
            } else {
                for row in results.removeFirst() {
                    total += Int(row[0].int64 ?? 0)
                    count += 1
                    if row[1].text == EntrySource.watch.rawValue { anyWatch = true }
                }
            }
            let row = StreakBook.dayRow(
                totalMl: total, entriesCount: count,
                goalMl: HydrationRules.dayGoalMl(baseGoalMl: base, context: context))
            if let row {
                c.enqueue(
                    """
                    INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (user_id, local_date) DO UPDATE SET
                        total_ml = excluded.total_ml, entries_count = excluded.entries_count, goal_met = excluded.goal_met
                    """,
                    [
                        .text(userID), .text(date.description), .integer(Int64(row.totalMl)),
                        .integer(Int64(row.entriesCount)), .integer(row.goalMet ? 1 : 0),
                    ])
            } else {
                c.enqueue(
                    "DELETE FROM daily_totals WHERE user_id = $1 AND local_date = $2",
                    [.text(userID), .text(date.description)])
            }
            changes.append(DayTotalChange(date: date, before: old, after: row))
        }
        let step = try StreakBook.apply(
            before, changes: changes, anyWatchEntry: anyWatch,
            goalDays: GoalDays(connection: c, userID: userID), now: now)
        try saveAchievements(tx, userID: userID, before: before, after: step.state, now: now)
    }

    /// The user's goal days for `StreakBook`, read inside the write transaction through the
    /// goal-day index of `daily_totals`.
    struct GoalDays: GoalDayIndex {
        let connection: PostgresConnection
        let userID: String

        func goalDays(from: LocalDate, descending: Bool, limit: Int) throws -> [LocalDate] {
            let sql =
                descending
                ? "SELECT local_date FROM daily_totals WHERE user_id = $1 AND goal_met = 1 AND local_date <= $2 ORDER BY local_date DESC LIMIT $3"
                : "SELECT local_date FROM daily_totals WHERE user_id = $1 AND goal_met = 1 AND local_date >= $2 ORDER BY local_date ASC LIMIT $3"
            return try connection.query(sql, [.text(userID), .text(from.description), .integer(Int64(limit))])
                .lazy.map { $0[0].text.flatMap(LocalDate.init(parsing:)) }.prefix { $0 != nil }.compactMap { $0 }
        }

        func latestGoalDay() throws -> LocalDate? {
            try connection.query(
                """
                SELECT local_date FROM daily_totals WHERE user_id = $1 AND goal_met = 1 ORDER BY local_date DESC LIMIT 1
                """, [.text(userID)]
            ).first?[0].text.flatMap(LocalDate.init(parsing:))
        }

        func allGoalDays() throws -> [LocalDate] {
            try connection.query(
                "SELECT local_date FROM daily_totals WHERE user_id = $1 AND goal_met = 1",
                [.text(userID)]
            ).compactMap { $0[0].text.flatMap(LocalDate.init(parsing:)) }
        }
    }

    static func loadProfile(_ c: PostgresConnection, userID: String) throws -> UserProfile? {
        let statement = profileStatement(userID)
        return try c.query(statement.sql, statement.args).first.map { StoreRows.user($0).profile }
    }

    /// The statement of `loadProfile` (no lock); decode the first row with `StoreRows.user`.
    static func profileStatement(_ userID: String) -> PostgresStatement {
        PostgresStatement("SELECT \(StoreRows.userColumns) FROM users WHERE id = $1", [.text(userID)])
    }

    /// Day contexts of `[from, to]` (nil = unbounded).
    static func loadContexts(_ c: PostgresConnection, userID: String, from: LocalDate?, to: LocalDate?) throws
        -> [LocalDate: DayContextContent]
    {
        let statement = contextsStatement(userID: userID, from: from, to: to)
        return contexts(try c.query(statement.sql, statement.args))
    }

    /// The statement of `loadContexts`; decode with `contexts`.
    static func contextsStatement(userID: String, from: LocalDate?, to: LocalDate?) -> PostgresStatement {
        PostgresStatement(
            """
            SELECT local_date, max_temperature_c, active_minutes FROM days
            WHERE user_id = $1 AND local_date >= $2 AND local_date <= $3
            """, [.text(userID), .text(from?.description ?? ""), .text(to?.description ?? "9999-99-99")])
    }

    static func contexts(_ rows: [PostgresRow]) -> [LocalDate: DayContextContent] {
        var out: [LocalDate: DayContextContent] = [:]
        for row in rows {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            out[d] = DayContextContent(maxTemperatureC: row[1].double, activeMinutes: row[2].int64.map { Int($0) })
        }
        return out
    }

    static func loadAchievements(_ c: PostgresConnection, userID: String) throws -> Achievements {
        let statement = achievementsStatement(userID)
        return achievements(try c.query(statement.sql, statement.args))
    }

    /// The statement of `loadAchievements`; decode with `achievements`.
    static func achievementsStatement(_ userID: String) -> PostgresStatement {
        PostgresStatement(
            """
            SELECT latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met, badges, updated_at, version
            FROM achievements WHERE user_id = $1
            """, [.text(userID)])
    }

    static func achievements(_ rows: [PostgresRow]) -> Achievements {
        guard let row = rows.first else { return Achievements() }
        return Achievements(
            latestRunEnd: row[0].text.flatMap(LocalDate.init(parsing:)), latestRunLength: Int(row[1].int64 ?? 0),
            longestStreakDays: Int(row[2].int64 ?? 0), totalMl: row[3].int64 ?? 0, daysGoalMet: Int(row[4].int64 ?? 0),
            badges: StoreRows.badges(row[5].text ?? ""), updatedAt: row[6].int64 ?? 0, version: row[7].int64 ?? 0)
    }

    /// Writes `after` with version + 1 and a new change position when it differs from `before`
    /// (`positionedWrite`: written by the commit's statement; the last write of the transaction).
    static func saveAchievements(
        _ tx: PostgresTransaction, userID: String, before: Achievements, after: Achievements,
        now: Int64
    ) throws {
        guard StreakBook.changed(from: before, to: after) else { return }
        let badges = StoreRows.badgesText(after.badges)
        try PostgresChangeSequence.of(tx).positionedWrite(
            of: ChangeRows.achievements(userID),
            """
            INSERT INTO achievements (user_id, latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met,
                badges, updated_at, version, change_position)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
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
            ])
    }
}
