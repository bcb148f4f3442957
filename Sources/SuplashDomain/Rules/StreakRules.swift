/// Streak and badge rules (spec §4 achievements, §6 badges). Pure: the storage adapter
/// feeds them the few days a write touched.
public enum StreakRules {
    /// The current streak on `today` given the most recent run of goal days: the run counts
    /// when it ends today or yesterday (today, still open, does not break it).
    public static func currentStreak(runEnd: LocalDate?, runLength: Int, today: LocalDate) -> Int {
        guard let runEnd, runLength > 0 else { return 0 }
        return runEnd.dayNumber >= today.dayNumber - 1 ? runLength : 0
    }

    /// Length of the run of consecutive dates that ends at `end`, given `metDescending`:
    /// goal dates ≤ `end`, newest first. Counts while each date is the day before the last.
    public static func runLength(endingAt end: LocalDate, metDescending: some Sequence<LocalDate>) -> Int {
        var expected = end.dayNumber
        var length = 0
        for d in metDescending {
            if d.dayNumber > expected { continue }
            guard d.dayNumber == expected else { break }
            length += 1
            expected -= 1
        }
        return length
    }

    /// Every maximal run in `dates` (any order, duplicates ignored): (last day, length),
    /// oldest first.
    public static func runs(_ dates: some Sequence<LocalDate>) -> [(end: LocalDate, length: Int)] {
        let days = Set(dates.map(\.dayNumber)).sorted()
        var out: [(LocalDate, Int)] = []
        var start = 0
        for i in days.indices {
            if i + 1 == days.count || days[i + 1] != days[i] + 1 {
                out.append((LocalDate(dayNumber: days[i]), i - start + 1))
                start = i + 1
            }
        }
        return out.map { (end: $0.0, length: $0.1) }
    }

    /// Thresholds of the streak badges, in days.
    public static let streakBadges: [(days: Int, badge: Badge)] = [
        (3, .streak3), (7, .streak7), (30, .streak30), (100, .streak100), (365, .streak365),
    ]

    /// The badges `state` qualifies for (spec §6). `anyEntry` / `anyWatchEntry`: whether the
    /// user has (or just wrote) a live entry / one with `source: watch`.
    public static func qualifyingBadges(
        longestStreakDays: Int, totalMl: Int64, daysGoalMet: Int,
        anyEntry: Bool, anyWatchEntry: Bool
    ) -> [Badge] {
        var out: [Badge] = []
        if anyEntry { out.append(.firstLog) }
        if daysGoalMet > 0 { out.append(.firstGoal) }
        for (days, badge) in streakBadges where longestStreakDays >= days { out.append(badge) }
        if totalMl >= 100_000 { out.append(.liters100) }
        if totalMl >= 1_000_000 { out.append(.liters1000) }
        if anyWatchEntry { out.append(.watchFirstLog) }
        return out
    }

    /// `earned` plus every badge of `qualifying` not yet earned, stamped `now`. Nothing is
    /// ever removed (earned badges are kept, spec §4).
    public static func award(_ qualifying: [Badge], to earned: [EarnedBadge], now: Int64) -> [EarnedBadge] {
        var out = earned
        let have = Set(earned.map(\.badge))
        for b in qualifying where !have.contains(b) { out.append(EarnedBadge(badge: b, earnedAt: now)) }
        return out
    }
}

extension HydrationRules {
    /// The base goal of a profile in ml: `dailyGoalMl`, else `recommendedGoalMl` (§6).
    public static func baseGoalMl(_ profile: UserProfile) -> Int {
        profile.dailyGoalMl ?? profile.recommendedGoalMl
    }

    /// A day's goal in ml from a base goal and that day's context (nil = no context).
    public static func dayGoalMl(baseGoalMl: Int, context: DayContextContent?) -> Int {
        dayGoalMl(baseGoalMl: baseGoalMl, maxTemperatureC: context?.maxTemperatureC, activeMinutes: context?.activeMinutes)
    }
}
