import SuplashDomain
import SuplashJSON

/// JSON shapes of the documents (spec §3, §4). Fields without a value are `null`,
/// so clients see a stable shape.
enum Presenter {
    static func int(_ v: Int) -> JSONValue { .number(JSONNumber(v)) }
    static func int(_ v: Int64) -> JSONValue { .number(JSONNumber(v)) }
    static func time(_ ms: Int64) -> JSONValue { .string(RFC3339.format(ms)) }
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    /// `users/{uid}`.
    static func profile(_ p: UserProfile) -> JSONValue {
        .object([
            ("id", .string(p.id)),
            ("email", .string(p.email)),
            ("emailVerified", .bool(p.emailVerified)),
            ("displayName", optional(p.displayName)),
            ("weightKg", p.weightKg.map { .number(JSONNumber($0)) } ?? .null),
            ("activityLevel", .string(p.activityLevel.rawValue)),
            ("wakeTime", .string(p.wakeTime)),
            ("sleepTime", .string(p.sleepTime)),
            ("timezone", .string(p.timezone)),
            ("locale", .string(p.locale)),
            ("dailyGoalMl", p.dailyGoalMl.map { int($0) } ?? .null),
            ("cupSizesMl", .array(p.cupSizesMl.map { int($0) })),
            ("reminders", p.reminders.json),
            ("recommendedGoalMl", int(p.recommendedGoalMl)),
            ("createdAt", time(p.createdAt)),
            ("updatedAt", time(p.updatedAt)),
            ("version", int(p.version)),
        ])
    }

    /// `water_logs/{uid}/entries/{entryId}`.
    static func entry(_ e: WaterEntry) -> JSONValue {
        .object([
            ("id", .string(e.id)),
            ("amountMl", int(e.content.amountMl)),
            ("loggedAt", time(e.content.loggedAt)),
            ("source", .string(e.content.source.rawValue)),
            ("healthKitUUID", optional(e.content.healthKitUUID)),
            ("note", optional(e.content.note)),
            ("createdAt", time(e.createdAt)),
            ("updatedAt", time(e.updatedAt)),
            ("version", int(e.version)),
        ])
    }
}
