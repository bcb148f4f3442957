import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Keeps `daily_totals` and `achievements` current inside the transaction of the write that
/// changes them (spec §4 achievements, §6 streaks), for both engines. The decisions (day rows,
/// streaks, badges) are the domain's `DailyTotals` and `StreakBook`; this enum loads and saves
/// rows. Every caller holds the user's lock (`UserLock`, or the `FOR UPDATE` of a profile
/// write) before calling, so one user's recomputes run one after the other on PostgreSQL, and
/// each READ COMMITTED statement sees every earlier writer's committed totals (on SQLite the
/// single writer serialises them). Only the touched days and the streak runs through them are
/// read — in one round trip (`recomputeReads`) — and the day rows are written with
/// `StoreTransaction.enqueue` (they travel with the next statement); the whole history is read
/// only when the profile's goal or time zone changes.
///
/// The entry hook's path is `@inlinable`, so that each store specializes it for its own
/// transaction and row types (run as unspecialized generic code, it cost about 4 % more
/// instructions per SQLite entry create).
public enum EntryBookkeeping {
    /// THE hook for entry writes (REST entry writes, batches, sync pushes): call it inside the
    /// write transaction after inserting, updating or deleting entries of `userID`, with each
    /// entry version that appeared (+1) or disappeared (−1; an update is both). Updates those
    /// local days' totals in O(1) per day (`DailyTotals`), the hourly totals (`HourlyTotals`) and
    /// the distinct amounts (`EntryAmounts`), then streaks, badges and totals, and
    /// writes a new achievements version with a change position when anything changed.
    /// - Parameters:
    ///   - profile: the user's profile when the caller has it (from `UserLock.lock`); read
    ///     (one statement) when nil. No profile (no such user): nothing is done.
    ///   - prefetched: the rows of `recomputeReads(userID:timezone:deltas:)` for the same
    ///     `deltas` under the zone `timezone`, which the caller sent after taking the user's lock
    ///     (in its own pipeline); used when `profile` still has that zone, else read again.
    ///   - now: ms since the epoch (the achievements' `updatedAt`, badges' `earnedAt`).
    ///   - planReminders: false when the caller recomputes the next reminder itself, once for
    ///     several writes (`ReminderPlanner`; the sync push).
    ///   - reminders: the rows of `ReminderPlanner.prefetch(…)`'s statements, which the caller
    ///     sent in its lock's pipeline (the recompute then costs no round trip).
    /// - Throws: the engine's error.
    @inlinable public static func entriesChanged<T: StoreTransaction>(
        _ tx: T, userID: String, profile: UserProfile? = nil, deltas: [EntryDelta], now: Int64,
        prefetched: (timezone: String, results: ArraySlice<[T.Connection.Row]>)? = nil, planReminders: Bool = true,
        reminders: (prefetch: ReminderPlanner.Prefetch, rows: ArraySlice<[T.Connection.Row]>)? = nil
    ) throws {
        guard !deltas.isEmpty else { return }
        guard let profile = try profile ?? tx.queryOne(BookkeepingSQL.profile, [.text(userID)]).map({ StoreRows.user($0).profile })
        else { return }
        let clock = ZoneClocks.shared.clock(profile.timezone)
        let byDay = DailyTotals.byDay(deltas, clock: clock)
        let changes = try recompute(
            tx, userID: userID, profile: profile, clock: clock, days: byDay.keys.sorted(), now: now, deltas: byDay,
            watchWritten: DailyTotals.watchWritten(deltas),
            prefetched: prefetched?.timezone == profile.timezone ? prefetched?.results : nil)
        try HourlyTotals.entriesChanged(tx, userID: userID, clock: clock, deltas: deltas, now: now)
        try EntryAmounts.entriesChanged(tx, userID: userID, deltas: deltas)
        if planReminders,
            let window = ReminderPlanner.windowToPlan(profile: profile, changes: changes, deltas: deltas, now: now)
        {
            try ReminderPlanner.dayChanged(
                tx, userID: userID, profile: profile, intakeWritten: ReminderPlanner.intakeWritten(deltas, window: window), now: now,
                window: window, prefetched: reminders.map { ($0.prefetch, $0.rows, deltas) })
        }
    }

    /// The reads `entriesChanged` makes for `deltas` when the profile's zone is `timezone`, for a
    /// caller to send right after its user lock in one round trip (pass their rows back as
    /// `prefetched`).
    public static func recomputeReads(userID: String, timezone: String, deltas: [EntryDelta]) -> [SQLStatement] {
        let clock = ZoneClocks.shared.clock(timezone)
        let byDay = DailyTotals.byDay(deltas, clock: clock)
        return recomputeReads(userID: userID, clock: clock, days: byDay.keys.sorted(), deltas: byDay)
    }

    /// The hook for day-context writes (REST `PUT` of a day, sync pushes of days): recomputes the
    /// totals of `dates` (`YYYY-MM-DD` local days of `profile`'s zone) from their live entries
    /// and their goals from the stored contexts, then the achievements. Call it inside the write
    /// transaction after writing the contexts, under the user's lock; then the next reminder
    /// (`ReminderPlanner`) unless `planReminders` is false.
    /// - Throws: the engine's error.
    public static func daysChanged(
        _ tx: some StoreTransaction, userID: String, profile: UserProfile, dates: Set<LocalDate>, now: Int64,
        planReminders: Bool = true
    ) throws {
        try recompute(
            tx, userID: userID, profile: profile, clock: ZoneClocks.shared.clock(profile.timezone),
            days: dates.sorted(), now: now, deltas: nil)
        if planReminders {
            try ReminderPlanner.dayChanged(tx, userID: userID, profile: profile, intakeWritten: false, now: now)
        }
    }

    /// The hook for profile writes (REST and sync): when the time zone changed, re-buckets every
    /// live entry into local days of the new zone; when the base goal changed, re-evaluates
    /// every day's goal. Then recomputes the achievements (badges are kept). Nothing is done
    /// when neither changed. Then the next reminder (`ReminderPlanner.profileChanged`) unless
    /// `planReminders` is false.
    /// - Throws: the engine's error.
    public static func profileChanged(
        _ tx: some StoreTransaction, previous: UserProfile, current: UserProfile, now: Int64, planReminders: Bool = true
    ) throws {
        try rebucket(tx, previous: previous, current: current, now: now)
        if planReminders { try ReminderPlanner.profileChanged(tx, previous: previous, current: current, now: now) }
    }

    static func rebucket(
        _ tx: some StoreTransaction, previous: UserProfile, current: UserProfile, now: Int64
    ) throws {
        let zoneChanged = previous.timezone != current.timezone
        let goalChanged = HydrationRules.baseGoalMl(previous) != HydrationRules.baseGoalMl(current)
        guard zoneChanged || goalChanged else { return }
        let userID = current.id
        let user = SQLValue.text(userID)
        let base = HydrationRules.baseGoalMl(current)
        let contexts = contexts(try tx.query(contextsSQL, contextsArgs(userID: userID, from: nil, to: nil)))
        if zoneChanged {
            let clock = ZoneClocks.shared.clock(current.timezone)
            var totals: [LocalDate: (Int, Int)] = [:]
            var live: [(loggedAt: Int64, ml: Int)] = []
            for row in try tx.query(BookkeepingSQL.liveEntries, [user]) {
                let entry = (loggedAt: row[0].int64 ?? 0, ml: Int(row[1].int64 ?? 0))
                let day = clock.localDate(of: entry.loggedAt)
                let t = totals[day] ?? (0, 0)
                totals[day] = (t.0 + entry.ml, t.1 + 1)
                live.append(entry)
            }
            try HourlyTotals.rebuild(tx, userID: userID, clock: clock, live: live, now: now)
            try tx.execute(BookkeepingSQL.deleteTotals, [user])
            for (day, t) in totals {
                let met = t.0 >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                try tx.execute(
                    BookkeepingSQL.insertTotals,
                    [user, .text(day.description), .integer(Int64(t.0)), .integer(Int64(t.1)), .integer(met ? 1 : 0)])
            }
        } else {
            for row in try tx.query(BookkeepingSQL.allTotals, [user]) {
                guard let text = row[0].text, let day = LocalDate(parsing: text) else { continue }
                let met = Int(row[1].int64 ?? 0) >= HydrationRules.dayGoalMl(baseGoalMl: base, context: contexts[day])
                if met != ((row[2].int64 ?? 0) != 0) {
                    try tx.execute(BookkeepingSQL.setGoalMet, [.integer(met ? 1 : 0), user, .text(text)])
                }
            }
        }
        let before = achievements(try tx.query(achievementsSQL, [user]))
        let sums = try tx.queryOne(BookkeepingSQL.sums, [user])
        let step = try StreakBook.rebuild(
            before, totalMl: sums?[0].int64 ?? 0, daysGoalMet: Int(sums?[1].int64 ?? 0),
            goalDays: GoalDays(connection: tx.connection, userID: userID), now: now)
        try save(tx, userID: userID, before: before, after: step.state, now: now)
    }

    // MARK: - Reads other use cases share

    /// The user's achievements row (`StoreRows.achievementsColumns`); binds `?1` = user id.
    /// Decode with `achievements(_:)`.
    public static let achievementsSQL = SQLText("SELECT \(StoreRows.achievementsColumns) FROM achievements WHERE user_id = ?1")

    /// The achievements of `rows` (of `achievementsSQL`): the first row, or the empty state.
    @inlinable public static func achievements(_ rows: [some SQLRowValues]) -> Achievements {
        guard let row = rows.first else { return Achievements() }
        return StoreRows.achievements(row)
    }

    /// The day contexts (`local_date, max_temperature_c, active_minutes` of `days`) of a user
    /// from one local date to another, both included; binds `?1` = user id, `?2` / `?3` = the
    /// first / last `YYYY-MM-DD` (see `contextsArgs`). Decode with `contexts(_:)`.
    public static let contextsSQL = SQLText(
        """
        SELECT local_date, max_temperature_c, active_minutes FROM days
        WHERE user_id = ?1 AND local_date >= ?2 AND local_date <= ?3
        """)

    /// The arguments of `contextsSQL` for `[from, to]` (nil: unbounded).
    public static func contextsArgs(userID: String, from: LocalDate?, to: LocalDate?) -> [SQLValue] {
        [.text(userID), .text(from?.description ?? ""), .text(to?.description ?? "9999-99-99")]
    }

    /// The contexts of `rows` (of `contextsSQL`) by local date.
    @inlinable public static func contexts(_ rows: [some SQLRowValues]) -> [LocalDate: DayContextContent] {
        var out: [LocalDate: DayContextContent] = [:]
        for row in rows {
            guard let d = row[0].text.flatMap(LocalDate.init(parsing:)) else { continue }
            out[d] = DayContextContent(maxTemperatureC: row[1].double, activeMinutes: row[2].int64.map { Int($0) })
        }
        return out
    }

    // MARK: - Recompute

    /// Achievements, then per day its totals row, its context and (without a delta) its live
    /// entries.
    @usableFromInline static func recomputeReads(
        userID: String, clock: ZoneClock, days: [LocalDate], deltas: [LocalDate: (ml: Int, count: Int)]?
    ) -> [SQLStatement] {
        var reads = [SQLStatement(achievementsSQL, [.text(userID)])]
        for date in days {
            reads.append(SQLStatement(BookkeepingSQL.dayTotals, [.text(userID), .text(date.description)]))
            reads.append(SQLStatement(contextsSQL, contextsArgs(userID: userID, from: date, to: date)))
            if deltas?[date] == nil {
                let range = clock.dayRange(date)
                reads.append(
                    SQLStatement(
                        BookkeepingSQL.dayEntries, [.text(userID), .integer(range.lowerBound), .integer(range.upperBound)]))
            }
        }
        return reads
    }

    /// Recomputes the totals of `days` and everything that depends on them. With `deltas`
    /// (entry writes) a day's new total is its stored total plus the delta; without (context
    /// writes) the day's live entries are summed. Returns each day's totals before and after.
    @discardableResult @inlinable static func recompute<T: StoreTransaction>(
        _ tx: T, userID: String, profile: UserProfile, clock: ZoneClock, days: [LocalDate], now: Int64,
        deltas: [LocalDate: (ml: Int, count: Int)]?, watchWritten: Bool = false,
        prefetched: ArraySlice<[T.Connection.Row]>? = nil
    ) throws -> [DayTotalChange] {
        let base = HydrationRules.baseGoalMl(profile)
        // Every read in one round trip, unless the caller sent them.
        var results = try prefetched ?? tx.pipeline(recomputeReads(userID: userID, clock: clock, days: days, deltas: deltas))[...]
        let before = achievements(results.removeFirst())
        var changes: [DayTotalChange] = []
        var anyWatch = watchWritten
        for date in days {
            let old = results.removeFirst().first.map {
                DayTotalRow(
                    totalMl: Int($0[0].int64 ?? 0), entriesCount: Int($0[1].int64 ?? 0), goalMet: ($0[2].int64 ?? 0) != 0)
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
                totalMl: total, entriesCount: count, goalMl: HydrationRules.dayGoalMl(baseGoalMl: base, context: context))
            if let row {
                try tx.enqueue(
                    BookkeepingSQL.upsertTotals,
                    [
                        .text(userID), .text(date.description), .integer(Int64(row.totalMl)),
                        .integer(Int64(row.entriesCount)), .integer(row.goalMet ? 1 : 0),
                    ])
            } else {
                try tx.enqueue(BookkeepingSQL.deleteDayTotals, [.text(userID), .text(date.description)])
            }
            changes.append(DayTotalChange(date: date, before: old, after: row))
            try PushOutboxStatements.progressChanged(
                tx, userID: userID, date: date, today: clock.localDate(of: now), beforeMl: old?.totalMl ?? 0, afterMl: total,
                goalMl: HydrationRules.dayGoalMl(baseGoalMl: base, context: context))
        }
        let step = try StreakBook.apply(
            before, changes: changes, anyWatchEntry: anyWatch, goalDays: GoalDays(connection: tx.connection, userID: userID),
            now: now)
        try save(tx, userID: userID, before: before, after: step.state, now: now)
        return changes
    }

    /// Writes `after` with version + 1 and a new change position when it differs from `before`
    /// (`positionedWrite`: on PostgreSQL written by the commit's statement — the last write of
    /// the transaction unless `defersPositionedWrites` is false).
    @inlinable static func save(_ tx: some StoreTransaction, userID: String, before: Achievements, after: Achievements, now: Int64) throws {
        guard StreakBook.changed(from: before, to: after) else { return }
        try tx.positionedWrite(
            of: .achievements(userID), userID: userID, BookkeepingSQL.upsertAchievements,
            [
                .text(userID), after.latestRunEnd.map { .text($0.description) } ?? .null,
                .integer(Int64(after.latestRunLength)), .integer(Int64(after.longestStreakDays)), .integer(after.totalMl),
                .integer(Int64(after.daysGoalMet)), .text(StoreRows.badgesText(after.badges)), .integer(now),
                .integer(before.version + 1),
            ])
    }

    /// The user's goal days for `StreakBook`, read inside the write transaction through the
    /// goal-day index of `daily_totals` (one statement each).
    @usableFromInline struct GoalDays<Connection: SQLExecutor>: GoalDayIndex {
        @usableFromInline let connection: Connection
        @usableFromInline let userID: String
        @inlinable init(connection: Connection, userID: String) {
            self.connection = connection
            self.userID = userID
        }

        @inlinable func goalDays(from: LocalDate, descending: Bool, limit: Int) throws -> [LocalDate] {
            try connection.query(
                descending ? BookkeepingSQL.goalDaysBefore : BookkeepingSQL.goalDaysAfter,
                [.text(userID), .text(from.description), .integer(Int64(limit))]
            )
            .lazy.map { $0[0].text.flatMap(LocalDate.init(parsing:)) }.prefix { $0 != nil }.compactMap { $0 }
        }

        @inlinable func latestGoalDay() throws -> LocalDate? {
            try connection.queryOne(BookkeepingSQL.latestGoalDay, [.text(userID)])?[0].text.flatMap(LocalDate.init(parsing:))
        }

        @inlinable func allGoalDays() throws -> [LocalDate] {
            try connection.query(BookkeepingSQL.allGoalDays, [.text(userID)]).compactMap {
                $0[0].text.flatMap(LocalDate.init(parsing:))
            }
        }
    }
}

@usableFromInline enum BookkeepingSQL {
    @usableFromInline static let profile = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE id = ?1")
    @usableFromInline static let dayTotals = SQLText(
        "SELECT total_ml, entries_count, goal_met FROM daily_totals WHERE user_id = ?1 AND local_date = ?2")
    @usableFromInline static let dayEntries = SQLText(
        """
        SELECT amount_ml, source FROM water_entries
        WHERE user_id = ?1 AND deleted = 0 AND logged_at >= ?2 AND logged_at < ?3
        """)
    @usableFromInline static let upsertTotals = SQLText(
        """
        INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?1, ?2, ?3, ?4, ?5)
        ON CONFLICT (user_id, local_date) DO UPDATE SET
            total_ml = excluded.total_ml, entries_count = excluded.entries_count, goal_met = excluded.goal_met
        """)
    @usableFromInline static let deleteDayTotals = SQLText("DELETE FROM daily_totals WHERE user_id = ?1 AND local_date = ?2")
    @usableFromInline static let liveEntries = SQLText("SELECT logged_at, amount_ml FROM water_entries WHERE user_id = ?1 AND deleted = 0")
    @usableFromInline static let deleteTotals = SQLText("DELETE FROM daily_totals WHERE user_id = ?1")
    @usableFromInline static let insertTotals = SQLText(
        "INSERT INTO daily_totals (user_id, local_date, total_ml, entries_count, goal_met) VALUES (?1, ?2, ?3, ?4, ?5)")
    @usableFromInline static let allTotals = SQLText("SELECT local_date, total_ml, goal_met FROM daily_totals WHERE user_id = ?1")
    @usableFromInline static let setGoalMet = SQLText("UPDATE daily_totals SET goal_met = ?1 WHERE user_id = ?2 AND local_date = ?3")
    @usableFromInline static let sums = SQLText(
        "SELECT COALESCE(SUM(total_ml), 0), COALESCE(SUM(goal_met), 0) FROM daily_totals WHERE user_id = ?1")
    @usableFromInline static let upsertAchievements = SQLText(
        """
        INSERT INTO achievements (user_id, latest_run_end, latest_run_length, longest_streak, total_ml, days_goal_met,
            badges, updated_at, version, change_position)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        ON CONFLICT (user_id) DO UPDATE SET
            latest_run_end = excluded.latest_run_end, latest_run_length = excluded.latest_run_length,
            longest_streak = excluded.longest_streak, total_ml = excluded.total_ml,
            days_goal_met = excluded.days_goal_met, badges = excluded.badges, updated_at = excluded.updated_at,
            version = excluded.version, change_position = excluded.change_position
        """)
    @usableFromInline static let goalDaysBefore = SQLText(
        """
        SELECT local_date FROM daily_totals WHERE user_id = ?1 AND goal_met = 1 AND local_date <= ?2
        ORDER BY local_date DESC LIMIT ?3
        """)
    @usableFromInline static let goalDaysAfter = SQLText(
        """
        SELECT local_date FROM daily_totals WHERE user_id = ?1 AND goal_met = 1 AND local_date >= ?2
        ORDER BY local_date ASC LIMIT ?3
        """)
    @usableFromInline static let latestGoalDay = SQLText(
        "SELECT local_date FROM daily_totals WHERE user_id = ?1 AND goal_met = 1 ORDER BY local_date DESC LIMIT 1")
    @usableFromInline static let allGoalDays = SQLText("SELECT local_date FROM daily_totals WHERE user_id = ?1 AND goal_met = 1")
}
