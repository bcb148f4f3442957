/// Activity level (spec §4 `users/{uid}`), with its §6 goal factor.
public enum ActivityLevel: String, Sendable, CaseIterable {
    case sedentary, light, moderate, active, athlete

    /// Multiplier of the §6 recommended-goal formula.
    public var goalFactor: Double {
        switch self {
        case .sedentary: 1.0
        case .light: 1.1
        case .moderate: 1.2
        case .active: 1.35
        case .athlete: 1.5
        }
    }
}

/// The `users/{uid}` document (spec §4). Times are milliseconds since the epoch (UTC).
public struct UserProfile: Sendable, Equatable {
    public var id: String
    public var email: String
    public var emailVerified: Bool
    public var displayName: String?
    /// Body weight in kilograms, 20–400, or nil when unknown.
    public var weightKg: Double?
    public var activityLevel: ActivityLevel
    /// `HH:MM`, 24 h.
    public var wakeTime: String
    /// `HH:MM`, 24 h.
    public var sleepTime: String
    /// IANA time-zone id, stored as sent.
    public var timezone: String
    /// BCP 47 tag.
    public var locale: String
    /// Fixed daily goal in ml (500–10000), or nil to use `recommendedGoalMl`.
    public var dailyGoalMl: Int?
    /// Quick-add cup sizes in ml, 1–8 values of 50–2000.
    public var cupSizesMl: [Int]
    /// Smart reminders' settings (spec §9 `reminders`; docs/reminders.md).
    public var reminders: ReminderSettings
    public var createdAt: Int64
    public var updatedAt: Int64
    /// Starts at 1, +1 per write.
    public var version: Int64

    public static let defaultActivityLevel = ActivityLevel.light
    public static let defaultWakeTime = "07:00"
    public static let defaultSleepTime = "23:00"
    public static let defaultTimezone = "Europe/Istanbul"
    public static let defaultLocale = "tr-TR"
    public static let defaultCupSizesMl = [150, 250, 330, 500]

    /// A new profile with every §4 default.
    public init(id: String, email: String, displayName: String?, now: Int64) {
        self.id = id
        self.email = email
        self.emailVerified = false
        self.displayName = displayName
        self.weightKg = nil
        self.activityLevel = Self.defaultActivityLevel
        self.wakeTime = Self.defaultWakeTime
        self.sleepTime = Self.defaultSleepTime
        self.timezone = Self.defaultTimezone
        self.locale = Self.defaultLocale
        self.dailyGoalMl = nil
        self.cupSizesMl = Self.defaultCupSizesMl
        self.reminders = ReminderSettings()
        self.createdAt = now
        self.updatedAt = now
        self.version = 1
    }

    /// §6: weightKg × 35 ml × activity factor, rounded to 50 ml; 2500 ml without a weight.
    public var recommendedGoalMl: Int {
        HydrationRules.recommendedGoalMl(weightKg: weightKg, activityLevel: activityLevel)
    }
}
