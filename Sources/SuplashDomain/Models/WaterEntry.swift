/// Where an entry was logged from (spec §4).
public enum EntrySource: String, Sendable, CaseIterable {
    case phone, watch, widget, notification, healthkit, `import`, api
}

/// The writable content of a water entry: what a client sends and what decides whether
/// a re-post is "identical" (spec §4: same values after normalisation, omitted = default).
public struct WaterEntryContent: Sendable, Equatable {
    /// 1–5000 ml.
    public var amountMl: Int
    /// Milliseconds since the epoch, UTC.
    public var loggedAt: Int64
    public var source: EntrySource
    /// Lower-case UUID of the HealthKit sample, or nil.
    public var healthKitUUID: String?
    /// ≤ 280 characters, or nil.
    public var note: String?

    public init(amountMl: Int, loggedAt: Int64, source: EntrySource = .api, healthKitUUID: String? = nil, note: String? = nil) {
        self.amountMl = amountMl
        self.loggedAt = loggedAt
        self.source = source
        self.healthKitUUID = healthKitUUID
        self.note = note
    }
}

/// A stored `water_logs/{uid}/entries/{entryId}` document (spec §4).
public struct WaterEntry: Sendable, Equatable {
    /// Lower-case UUID, unique per user.
    public var id: String
    public var userID: String
    public var content: WaterEntryContent
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    /// Milliseconds since the epoch.
    public var updatedAt: Int64
    /// Starts at 1, +1 per write (a delete too).
    public var version: Int64
    /// True for a tombstone (kept for the sync feed).
    public var deleted: Bool

    public init(
        id: String, userID: String, content: WaterEntryContent, createdAt: Int64, updatedAt: Int64,
        version: Int64, deleted: Bool
    ) {
        self.id = id
        self.userID = userID
        self.content = content
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.deleted = deleted
    }
}
