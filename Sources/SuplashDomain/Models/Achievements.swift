/// Badge ids of spec §6, with the rule that earns each.
public enum Badge: String, Sendable, CaseIterable {
    /// The first entry.
    case firstLog = "first_log"
    /// The first day whose total reached its goal.
    case firstGoal = "first_goal"
    /// A streak of 3 / 7 / 30 / 100 / 365 consecutive goal days.
    case streak3 = "streak_3"
    case streak7 = "streak_7"
    case streak30 = "streak_30"
    case streak100 = "streak_100"
    case
        streak365 = "streak_365"
    /// 100 litres (100 000 ml) in total.
    case liters100 = "liters_100"
    /// 1000 litres (1 000 000 ml) in total.
    case liters1000 = "liters_1000"
    /// The first entry logged from the Apple Watch (`source: watch`).
    case watchFirstLog = "watch_first_log"
}

/// An earned badge; earned badges are never taken away (spec §4 achievements).
public struct EarnedBadge: Sendable, Equatable {
    /// Which badge.
    public var badge: Badge
    /// ms since the epoch: the commit that earned it.
    public var earnedAt: Int64

    public init(badge: Badge, earnedAt: Int64) {
        self.badge = badge
        self.earnedAt = earnedAt
    }
}

/// The stored `achievements/{uid}` state (spec §4). The current streak depends on "today",
/// so the latest run of goal days is stored and `currentStreakDays(today:)` derives it.
public struct Achievements: Sendable, Equatable {
    /// The last day of the most recent run of consecutive goal days, or nil.
    public var latestRunEnd: LocalDate?
    /// Length of that run in days (0 without one).
    public var latestRunLength: Int
    /// The longest run of consecutive goal days that currently exists in the data.
    public var longestStreakDays: Int
    /// Sum of all live entries, ml.
    public var totalMl: Int64
    /// Days whose total reached that day's goal.
    public var daysGoalMet: Int
    /// Earned badges, oldest first.
    public var badges: [EarnedBadge]
    /// ms since the epoch (0 before the first write).
    public var updatedAt: Int64
    /// 0 before the first write, +1 per change.
    public var version: Int64

    public init(
        latestRunEnd: LocalDate? = nil, latestRunLength: Int = 0, longestStreakDays: Int = 0, totalMl: Int64 = 0,
        daysGoalMet: Int = 0, badges: [EarnedBadge] = [], updatedAt: Int64 = 0, version: Int64 = 0
    ) {
        self.latestRunEnd = latestRunEnd
        self.latestRunLength = latestRunLength
        self.longestStreakDays = longestStreakDays
        self.totalMl = totalMl
        self.daysGoalMet = daysGoalMet
        self.badges = badges
        self.updatedAt = updatedAt
        self.version = version
    }

    /// The current streak on local day `today`: the latest run counts when it ends today
    /// or yesterday (today, still open, does not break it), else 0 (spec §4).
    public func currentStreakDays(today: LocalDate) -> Int {
        StreakRules.currentStreak(runEnd: latestRunEnd, runLength: latestRunLength, today: today)
    }
}
