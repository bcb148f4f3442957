/// The writable content of `water_logs/{uid}/days/{date}` (spec §4): what the phone learns
/// from WeatherKit and motion about one local day. Both fields raise that day's goal (§6).
public struct DayContextContent: Sendable, Equatable {
    /// The day's maximum temperature in °C, −50…60, or nil.
    public var maxTemperatureC: Double?
    /// Active minutes, 0…1440, or nil.
    public var activeMinutes: Int?

    public init(maxTemperatureC: Double? = nil, activeMinutes: Int? = nil) {
        self.maxTemperatureC = maxTemperatureC
        self.activeMinutes = activeMinutes
    }
}

/// A stored day document. Times are ms since the epoch.
public struct DayContext: Sendable, Equatable {
    /// The local date in the profile's time zone.
    public var date: LocalDate
    /// The writable fields.
    public var content: DayContextContent
    /// ms since the epoch.
    public var createdAt: Int64
    /// ms since the epoch.
    public var updatedAt: Int64
    /// Starts at 1, +1 per write.
    public var version: Int64

    public init(date: LocalDate, content: DayContextContent, createdAt: Int64, updatedAt: Int64, version: Int64) {
        self.date = date
        self.content = content
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }
}

/// What a user drank on one local day (the per-day aggregate behind summary, stats and streaks).
public struct DayTotal: Sendable, Equatable {
    /// The local date.
    public var date: LocalDate
    /// Sum of the day's live entries, ml.
    public var totalMl: Int
    /// Live entries on the day.
    public var entriesCount: Int

    public init(date: LocalDate, totalMl: Int, entriesCount: Int) {
        self.date = date
        self.totalMl = totalMl
        self.entriesCount = entriesCount
    }
}
