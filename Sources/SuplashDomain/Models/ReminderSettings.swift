import SuplashJSON

/// How hydration reminders are timed (spec §9 profile `reminders.mode`).
public enum ReminderMode: String, Sendable, CaseIterable {
    /// Follows an expected-intake curve for the day; `intervalMinutes` is the minimum gap.
    case adaptive
    /// Every `intervalMinutes` inside the waking window, skipped while the goal is met.
    case fixed
}

/// A daily quiet period on the wall clock, `[start, end)`; crosses midnight when `end` is
/// earlier than `start` (`22:00`–`07:00`). `start` and `end` are never equal.
public struct QuietHours: Sendable, Hashable {
    /// First quiet minute.
    public let start: ClockTime
    /// First minute after the quiet period.
    public let end: ClockTime

    /// nil when `start == end` (an empty or a whole-day period is not a quiet period).
    public init?(start: ClockTime, end: ClockTime) {
        guard start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// True when the wall-clock minute `minuteOfDay` (0–1439) is quiet.
    public func contains(minuteOfDay m: Int) -> Bool {
        start < end ? (start.minuteOfDay <= m && m < end.minuteOfDay) : (m >= start.minuteOfDay || m < end.minuteOfDay)
    }

    /// `t` when it is not quiet, else the end of the quiet period that contains it: the
    /// first instant (ms) whose wall time is `end`, on the local day the period ends
    /// (`ZoneClock.instant(of:at:)` rules for gaps and repeats).
    public func firstAllowedInstant(atOrAfter t: Int64, clock: ZoneClock) -> Int64 {
        let m = clock.wallMinuteOfDay(at: t)
        guard contains(minuteOfDay: m) else { return t }
        let today = clock.localDate(of: t)
        let endDay = (start > end && m >= start.minuteOfDay) ? today.adding(days: 1) : today
        let candidate = clock.instant(of: endDay, at: end)
        if candidate > t { return candidate }
        // Second pass of an autumn-repeated hour: the first occurrence of `end` already
        // passed; the wall clock reaches `end` again after the remaining minutes.
        let minutesLeft = Int64(floorMod(Int64(end.minuteOfDay - m), 1440))
        return t - floorMod(t, 60_000) + minutesLeft * 60_000
    }
}

/// The profile's `reminders` object (spec §9): `{enabled (true), mode: adaptive|fixed
/// (adaptive), intervalMinutes (30–240, 90), maxPerDay (1–24, 8), quietStart?, quietEnd?
/// ("HH:MM"), billReminders (true)}`.
public struct ReminderSettings: Sendable, Equatable {
    /// Master switch: false stops hydration and bill reminders and campaigns (docs/reminders.md).
    public var enabled: Bool
    /// Adaptive or fixed timing.
    public var mode: ReminderMode
    /// Minutes, 30–240: the fixed mode's period and the adaptive mode's minimum gap.
    public var intervalMinutes: Int
    /// Hydration reminders per reminder day, 1–24.
    public var maxPerDay: Int
    /// Start of the daily quiet period, or nil. Set together with `quietEnd`.
    public var quietStart: ClockTime?
    /// End of the daily quiet period, or nil. Set together with `quietStart`.
    public var quietEnd: ClockTime?
    /// Bill-due reminders on or off.
    public var billReminders: Bool

    /// §9 default of `intervalMinutes`.
    public static let defaultIntervalMinutes = 90
    /// §9 default of `maxPerDay`.
    public static let defaultMaxPerDay = 8
    /// §9 bounds of `intervalMinutes`, minutes.
    public static let intervalRange: ClosedRange<Int64> = 30...240
    /// §9 bounds of `maxPerDay`.
    public static let maxPerDayRange: ClosedRange<Int64> = 1...24

    /// Every §9 default: on, adaptive, 90 min, 8 a day, no quiet hours, bill reminders on.
    public init(
        enabled: Bool = true, mode: ReminderMode = .adaptive, intervalMinutes: Int = defaultIntervalMinutes,
        maxPerDay: Int = defaultMaxPerDay, quietStart: ClockTime? = nil, quietEnd: ClockTime? = nil,
        billReminders: Bool = true
    ) {
        self.enabled = enabled
        self.mode = mode
        self.intervalMinutes = intervalMinutes
        self.maxPerDay = maxPerDay
        self.quietStart = quietStart
        self.quietEnd = quietEnd
        self.billReminders = billReminders
    }

    /// Settings stored as the text of `json` (the store's `users.reminders` column), read by
    /// applying it as a merge patch to the defaults: a missing or unreadable value reads as the
    /// defaults, a value missing members as the defaults for those.
    /// The defaults' stored text (every profile that never changed its reminders) and `{}` (the
    /// column default) read without a JSON parse: the profile is decoded on every sync pull.
    public init(stored text: String?) {
        if let text, text.hasSameCodePoints(as: ReminderSettings.defaultStoredText) || text == "{}" {
            self.init()
            return
        }
        guard let text, let value = try? JSONParser.parse(text),
            let settings = try? ReminderSettingsValidation.applyMergePatch(value, to: ReminderSettings())
        else {
            self.init()
            return
        }
        self = settings
    }

    /// `ReminderSettings().json` serialized: what the store keeps for default settings.
    static let defaultStoredText = ReminderSettings().json.serializedString()

    /// The quiet period, or nil when either end is unset.
    public var quietHours: QuietHours? {
        guard let quietStart, let quietEnd else { return nil }
        return QuietHours(start: quietStart, end: quietEnd)
    }

    /// The JSON shape of spec §9 (quiet times omitted when unset).
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("enabled", .bool(enabled)), ("mode", .string(mode.rawValue)),
            ("intervalMinutes", .number(JSONNumber(intervalMinutes))), ("maxPerDay", .number(JSONNumber(maxPerDay))),
        ]
        if let quietStart { members.append(("quietStart", .string(quietStart.description))) }
        if let quietEnd { members.append(("quietEnd", .string(quietEnd.description))) }
        members.append(("billReminders", .bool(billReminders)))
        return .object(members)
    }
}

/// Validation of the profile's `reminders` member as a JSON merge patch (RFC 7396, spec §9).
/// Profile validation calls it with the member's value and the pointer `/reminders`.
public enum ReminderSettingsValidation {
    /// Members a client may write.
    public static let writableFields: Set<String> = [
        "enabled", "mode", "intervalMinutes", "maxPerDay", "quietStart", "quietEnd", "billReminders",
    ]

    /// Applies `patch` (the value of the profile's `reminders` member) to `settings`.
    ///
    /// `null` as the whole value resets every field to its §9 default; `null` for one field
    /// resets that field (`quietStart`/`quietEnd` to unset). After the merge `quietStart`
    /// and `quietEnd` must be both set or both unset, and must differ.
    ///
    /// - Parameter pointer: RFC 6901 pointer of the member in the request body, the prefix
    ///   of every reported error (`/reminders/maxPerDay`).
    /// - Throws: `ValidationFailure` listing every bad field (`invalid_type`,
    ///   `invalid_format`, `out_of_range`, `unknown_field`, `required`).
    public static func applyMergePatch(
        _ patch: JSONValue, to settings: ReminderSettings,
        pointer: String = "/reminders"
    ) throws(ValidationFailure) -> ReminderSettings {
        let members: [(String, JSONValue)]
        switch patch {
        case .null: return ReminderSettings()
        case .object(let m): members = m
        default: throw ValidationFailure([FieldError(pointer, .invalidType, "must be an object")])
        }
        var r = FieldReader(members: members, prefix: pointer)
        r.rejectOthers(writable: writableFields, readOnly: [])
        var s = settings
        switch bool(&r, "enabled") {
        case .value(let v): s.enabled = v
        case .null: s.enabled = true
        default: break
        }
        switch r.oneOf("mode", ReminderMode.allCases.map(\.rawValue)) {
        case .value(let v): s.mode = ReminderMode(rawValue: v) ?? .adaptive
        case .null: s.mode = .adaptive
        default: break
        }
        switch r.int("intervalMinutes", in: ReminderSettings.intervalRange) {
        case .value(let v): s.intervalMinutes = Int(v)
        case .null: s.intervalMinutes = ReminderSettings.defaultIntervalMinutes
        default: break
        }
        switch r.int("maxPerDay", in: ReminderSettings.maxPerDayRange) {
        case .value(let v): s.maxPerDay = Int(v)
        case .null: s.maxPerDay = ReminderSettings.defaultMaxPerDay
        default: break
        }
        var quietValid = true
        for name in ["quietStart", "quietEnd"] {
            let value: ClockTime?
            switch r.formatted(name, formatMessage: "must be HH:MM (24 h)", parse: ClockTime.init(parsing:)) {
            case .value(let v): value = v
            case .null: value = nil
            case .absent: continue
            case .invalid:
                quietValid = false
                continue
            }
            if name == "quietStart" { s.quietStart = value } else { s.quietEnd = value }
        }
        switch bool(&r, "billReminders") {
        case .value(let v): s.billReminders = v
        case .null: s.billReminders = true
        default: break
        }
        if quietValid {
            switch (s.quietStart, s.quietEnd) {
            case (.some(let a), .some(let b)) where a == b:
                r.fail("quietEnd", .outOfRange, "must differ from quietStart")
            case (.some, nil):
                r.fail("quietEnd", .required, "required when quietStart is set")
            case (nil, .some):
                r.fail("quietStart", .required, "required when quietEnd is set")
            default: break
            }
        }
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return s
    }

    private static func bool(_ r: inout FieldReader, _ name: String) -> FieldReader.Value<Bool> {
        guard let v = r.member(name) else { return .absent }
        switch v {
        case .null: return .null
        case .bool(let b): return .value(b)
        default:
            r.fail(name, .invalidType, "must be a boolean")
            return .invalid
        }
    }
}
