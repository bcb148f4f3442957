/// One stored `daily_totals` row: a local day with at least one live entry.
public struct DayTotalRow: Sendable, Equatable {
    /// Sum of the day's live entries, ml.
    public var totalMl: Int
    /// Number of the day's live entries (≥ 1).
    public var entriesCount: Int
    /// True when `totalMl` reaches the day's goal (a goal day, spec §6).
    public var goalMet: Bool

    public init(totalMl: Int, entriesCount: Int, goalMet: Bool) {
        self.totalMl = totalMl
        self.entriesCount = entriesCount
        self.goalMet = goalMet
    }
}

/// One local day's `daily_totals` row before and after a write (nil: no row, i.e. no live
/// entry that day).
public struct DayTotalChange: Sendable, Equatable {
    /// The local day (in the profile's time zone).
    public var date: LocalDate
    /// The row before the write (nil: none).
    public var before: DayTotalRow?
    /// The row after the write (nil: deleted, no live entry left).
    public var after: DayTotalRow?

    public init(date: LocalDate, before: DayTotalRow?, after: DayTotalRow?) {
        self.date = date
        self.before = before
        self.after = after
    }
}

/// Read access to a user's goal days (`daily_totals` rows with `goal_met`), the one thing
/// the streak bookkeeping must look up beyond the days a write touched. Each store adapter
/// implements it with index-only queries inside its write transaction, after it has saved
/// the touched days' rows.
public protocol GoalDayIndex {
    /// Up to `limit` goal days from `from` (inclusive) going back in time (`descending`,
    /// newest first) or forward (oldest first).
    func goalDays(from: LocalDate, descending: Bool, limit: Int) throws -> [LocalDate]
    /// The most recent goal day, or nil.
    func latestGoalDay() throws -> LocalDate?
    /// Every goal day, any order.
    func allGoalDays() throws -> [LocalDate]
}

/// The achievements bookkeeping of spec §4/§6, shared by every store adapter: from the
/// stored achievements and the day-total changes of one write, the new achievements and
/// the badges newly earned. No storage: goal days beyond the touched ones are read through
/// a `GoalDayIndex`; the adapter loads the state, calls a step and saves the result (only
/// when `changed(from:to:)`).
public enum StreakBook {
    /// The result of a step.
    public struct Step: Sendable, Equatable {
        /// The new state; `updatedAt` and `version` still those of the input (see `stamped`).
        public var state: Achievements
        /// Badges earned by this step, in catalogue order (each stamped with the step's `now`).
        public var newlyEarned: [Badge]
    }

    /// A day's `daily_totals` row for `totalMl` (ml) over `entriesCount` live entries, judged
    /// against the day's goal `goalMl` (ml); nil when the day has no live entry (the row is
    /// deleted).
    public static func dayRow(totalMl: Int, entriesCount: Int, goalMl: Int) -> DayTotalRow? {
        guard entriesCount > 0 else { return nil }
        return DayTotalRow(totalMl: totalMl, entriesCount: entriesCount, goalMet: totalMl >= goalMl)
    }

    /// Applies the day-total changes of one write (each date once) to `state`.
    ///
    /// Totals and goal-day counts move by the difference of each day's rows; when a day
    /// became or stopped being a goal day, the latest run is found again, and the longest
    /// run is raised by the runs through new goal days — or found again from every goal
    /// day when a lost goal day may have belonged to the longest run (rare). Earned badges
    /// are kept.
    /// - Parameters:
    ///   - anyWatchEntry: a watch entry was written (or a recounted day holds one).
    ///   - goalDays: the goal days *after* the write.
    ///   - now: the write's server time, ms (the `earnedAt` of new badges).
    /// - Throws: what `goalDays` throws.
    public static func apply(
        _ state: Achievements, changes: [DayTotalChange], anyWatchEntry: Bool,
        goalDays: some GoalDayIndex, now: Int64
    ) throws -> Step {
        var next = state
        var becameMet: [LocalDate] = []
        var becameUnmet: [LocalDate] = []
        for change in changes.sorted(by: { $0.date < $1.date }) {
            next.totalMl += Int64((change.after?.totalMl ?? 0) - (change.before?.totalMl ?? 0))
            let wasMet = change.before?.goalMet ?? false
            let isMet = change.after?.goalMet ?? false
            if wasMet != isMet {
                next.daysGoalMet += isMet ? 1 : -1
                if isMet { becameMet.append(change.date) } else { becameUnmet.append(change.date) }
            }
        }
        if !becameMet.isEmpty || !becameUnmet.isEmpty {
            (next.latestRunEnd, next.latestRunLength) = try latestRun(goalDays)
            var rescan = becameUnmet.count > 1
            if let d = becameUnmet.first, !rescan {
                // The run this day belonged to, as it was: if it may have been the longest,
                // the longest must be found again.
                let oldRun =
                    try walk(goalDays, from: d.adding(days: -1), descending: true) + 1
                    + (try walk(goalDays, from: d.adding(days: 1), descending: false))
                rescan = oldRun >= next.longestStreakDays
            }
            if rescan {
                next.longestStreakDays = try longestRun(goalDays)
            }
            for d in becameMet {
                let run =
                    try walk(goalDays, from: d, descending: true)
                    + (try walk(goalDays, from: d.adding(days: 1), descending: false))
                next.longestStreakDays = max(next.longestStreakDays, run)
            }
            next.longestStreakDays = max(next.longestStreakDays, next.latestRunLength)
        }
        let anyEntry = changes.contains { ($0.after?.entriesCount ?? 0) > 0 }
        return award(next, anyEntry: anyEntry, anyWatchEntry: anyWatchEntry, now: now)
    }

    /// Rebuilds `state` from the user's whole history after the time zone or the base goal
    /// changed: `totalMl` (ml) and `daysGoalMet` summed over every day, the latest and
    /// longest runs from `goalDays`. Earned badges are kept; `first_log` follows a non-zero
    /// total, `watch_first_log` is never newly earned here.
    /// - Throws: what `goalDays` throws.
    public static func rebuild(
        _ state: Achievements, totalMl: Int64, daysGoalMet: Int, goalDays: some GoalDayIndex,
        now: Int64
    ) throws -> Step {
        var next = state
        next.totalMl = totalMl
        next.daysGoalMet = daysGoalMet
        (next.latestRunEnd, next.latestRunLength) = try latestRun(goalDays)
        next.longestStreakDays = try longestRun(goalDays)
        return award(next, anyEntry: totalMl > 0, anyWatchEntry: false, now: now)
    }

    /// True when `after` differs from `before` in anything but `updatedAt` and `version`:
    /// only then is a new achievements version (and change position) written.
    public static func changed(from before: Achievements, to after: Achievements) -> Bool {
        var next = after
        next.updatedAt = before.updatedAt
        next.version = before.version
        return next != before
    }

    /// `after` as saved by a write at `now` (ms): `updatedAt` = now, version = `before`'s + 1.
    public static func stamped(_ after: Achievements, before: Achievements, now: Int64) -> Achievements {
        var next = after
        next.updatedAt = now
        next.version = before.version + 1
        return next
    }

    /// Consecutive goal days starting at `from` (inclusive), going back or forward, read in
    /// chunks of 64 days.
    /// - Throws: what `goalDays` throws.
    public static func walk(_ goalDays: some GoalDayIndex, from: LocalDate, descending: Bool) throws -> Int {
        let chunk = 64
        var expected = from.dayNumber
        var count = 0
        while true {
            let days = try goalDays.goalDays(from: LocalDate(dayNumber: expected), descending: descending, limit: chunk)
            for d in days {
                guard d.dayNumber == expected else { return count }
                count += 1
                expected += descending ? -1 : 1
            }
            if days.count < chunk { return count }
        }
    }

    /// The most recent run of goal days: (last day, length), or (nil, 0).
    /// - Throws: what `goalDays` throws.
    public static func latestRun(_ goalDays: some GoalDayIndex) throws -> (LocalDate?, Int) {
        guard let end = try goalDays.latestGoalDay() else { return (nil, 0) }
        return (end, try walk(goalDays, from: end, descending: true))
    }

    /// The longest run of goal days (every goal day is read).
    /// - Throws: what `goalDays` throws.
    public static func longestRun(_ goalDays: some GoalDayIndex) throws -> Int {
        StreakRules.runs(try goalDays.allGoalDays()).map(\.length).max() ?? 0
    }

    private static func award(_ state: Achievements, anyEntry: Bool, anyWatchEntry: Bool, now: Int64) -> Step {
        var next = state
        let qualifying = StreakRules.qualifyingBadges(
            longestStreakDays: next.longestStreakDays, totalMl: next.totalMl,
            daysGoalMet: next.daysGoalMet, anyEntry: anyEntry,
            anyWatchEntry: anyWatchEntry)
        let had = Set(state.badges.map(\.badge))
        next.badges = StreakRules.award(qualifying, to: state.badges, now: now)
        return Step(state: next, newlyEarned: qualifying.filter { !had.contains($0) })
    }
}
