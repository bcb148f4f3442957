import SuplashJSON

/// Validation of `users/{uid}` merge patches (spec §4 profile table, RFC 7396).
public enum ProfileValidation {
    /// Members a client may write.
    public static let writableFields: Set<String> = [
        "displayName", "weightKg", "activityLevel", "wakeTime", "sleepTime", "timezone", "locale",
        "dailyGoalMl", "cupSizesMl", "reminders",
    ]
    /// Members the server owns (`read_only_field`).
    public static let readOnlyFields: Set<String> = [
        "id", "email", "emailVerified", "createdAt", "updatedAt", "version", "recommendedGoalMl",
    ]

    /// Applies a JSON merge patch to `profile` and returns the result, or throws every
    /// bad field at once. `null` resets a field to its §4 default. Does not touch
    /// `updatedAt`/`version` (the store stamps those).
    ///
    /// - Parameter isKnownTimeZone: true for ids in the IANA tz database (the caller
    ///   checks the system database; the domain does no I/O).
    /// - Throws: `ValidationFailure` (422 `validation_failed`).
    public static func applyMergePatch(
        _ patch: JSONValue, to profile: UserProfile,
        isKnownTimeZone: (String) -> Bool
    ) throws(ValidationFailure) -> UserProfile {
        guard case .object(let members) = patch else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields, readOnly: readOnlyFields)
        var p = profile
        switch r.string("displayName", maxLength: 80) {
        case .value(let s): p.displayName = s
        case .null: p.displayName = nil
        default: break
        }
        switch r.number("weightKg", in: 20...400) {
        case .value(let w): p.weightKg = w
        case .null: p.weightKg = nil
        default: break
        }
        switch r.oneOf("activityLevel", ActivityLevel.allCases.map(\.rawValue)) {
        case .value(let s): p.activityLevel = ActivityLevel(rawValue: s) ?? UserProfile.defaultActivityLevel
        case .null: p.activityLevel = UserProfile.defaultActivityLevel
        default: break
        }
        switch r.formatted("wakeTime", formatMessage: "must be HH:MM (24 h)", parse: clockTime) {
        case .value(let s): p.wakeTime = s
        case .null: p.wakeTime = UserProfile.defaultWakeTime
        default: break
        }
        switch r.formatted("sleepTime", formatMessage: "must be HH:MM (24 h)", parse: clockTime) {
        case .value(let s): p.sleepTime = s
        case .null: p.sleepTime = UserProfile.defaultSleepTime
        default: break
        }
        switch r.formatted(
            "timezone", formatMessage: "must be an IANA time-zone id",
            parse: { isKnownTimeZone($0) ? $0 : nil })
        {
        case .value(let s): p.timezone = s
        case .null: p.timezone = UserProfile.defaultTimezone
        default: break
        }
        switch r.formatted("locale", formatMessage: "must be a BCP 47 language tag", parse: languageTag) {
        case .value(let s): p.locale = s
        case .null: p.locale = UserProfile.defaultLocale
        default: break
        }
        switch r.int("dailyGoalMl", in: 500...10_000) {
        case .value(let g): p.dailyGoalMl = Int(g)
        case .null: p.dailyGoalMl = nil
        default: break
        }
        if let cups = r.member("cupSizesMl") {
            switch cups {
            case .null:
                p.cupSizesMl = UserProfile.defaultCupSizesMl
            case .array(let items):
                if items.isEmpty || items.count > 8 {
                    r.fail("cupSizesMl", .outOfRange, "must hold 1 to 8 sizes")
                } else {
                    var sizes: [Int] = []
                    var ok = true
                    for (index, item) in items.enumerated() {
                        let pointer = r.pointer("cupSizesMl") + "/\(index)"
                        guard case .number(let n) = item, n.isIntegral else {
                            r.fail(pointer: pointer, .invalidType, "must be an integer")
                            ok = false
                            continue
                        }
                        guard let v = n.int64Value, (50...2000).contains(v) else {
                            r.fail(pointer: pointer, .outOfRange, "must be between 50 and 2000")
                            ok = false
                            continue
                        }
                        sizes.append(Int(v))
                    }
                    if ok { p.cupSizesMl = sizes }
                }
            default:
                r.fail("cupSizesMl", .invalidType, "must be an array of integers")
            }
        }
        if let patch = r.member("reminders") {
            do throws(ValidationFailure) {
                p.reminders = try ReminderSettingsValidation.applyMergePatch(patch, to: p.reminders, pointer: r.pointer("reminders"))
            } catch {
                for e in error.errors { r.fail(pointer: e.pointer, e.code, e.message) }
            }
        }
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return p
    }

    /// `HH:MM`, 00:00–23:59.
    public static func clockTime(_ s: String) -> String? {
        let b = Array(s.utf8)
        guard b.count == 5, b[2] == 0x3A else { return nil }
        let d = [b[0], b[1], b[3], b[4]].map { Int($0) - 0x30 }
        guard d.allSatisfy({ (0...9).contains($0) }) else { return nil }
        let h = d[0] * 10 + d[1]
        let m = d[2] * 10 + d[3]
        return h < 24 && m < 60 ? s : nil
    }

    /// A BCP 47 tag of the common shape: a 2–3 (or 4–8) letter language, then
    /// subtags of 1–8 letters or digits (`tr-TR`, `en`, `zh-Hant-TW`). At most 35 chars.
    public static func languageTag(_ s: String) -> String? {
        guard !s.isEmpty, s.utf8.count <= 35 else { return nil }
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...8).contains(first.count), first.utf8.allSatisfy(isASCIILetter) else { return nil }
        for part in parts.dropFirst() {
            guard (1...8).contains(part.count), part.utf8.allSatisfy({ isASCIILetter($0) || (0x30...0x39).contains($0) }) else {
                return nil
            }
        }
        return s
    }

    private static func isASCIILetter(_ c: UInt8) -> Bool {
        (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
    }
}
