import SuplashJSON

/// The bodies of the notification actions (spec §9 "Reminders"): `:drink {amountMl?}` and
/// `:snooze {minutes?}`. An absent body reads as `{}`; any other member is `unknown_field`.
public enum ReminderActionValidation {
    /// §9: `:snooze` minutes, 10–120.
    public static let snoozeMinutes: ClosedRange<Int64> = 10...120
    /// §9: `:snooze` without `minutes`.
    public static let defaultSnoozeMinutes = 30

    /// `{amountMl?}` (1–5000, as an entry's): the amount, nil = the reminder's suggested cup.
    /// - Throws: `ValidationFailure` (`invalid_type` for a non-object body, a null or
    ///   non-integer amount; `out_of_range`; `unknown_field`).
    public static func drink(_ body: JSONValue?) throws(ValidationFailure) -> Int? {
        var r = try reader(body)
        r.rejectOthers(writable: ["amountMl"], readOnly: [])
        let amount = value(r.int("amountMl", in: 1...5000), &r, "amountMl")
        guard r.errors.isEmpty else { throw ValidationFailure(r.errors) }
        return amount.map { Int($0) }
    }

    /// `{minutes?}` (10–120, default 30).
    /// - Throws: `ValidationFailure`, as `drink`.
    public static func snooze(_ body: JSONValue?) throws(ValidationFailure) -> Int {
        var r = try reader(body)
        r.rejectOthers(writable: ["minutes"], readOnly: [])
        let minutes = value(r.int("minutes", in: snoozeMinutes), &r, "minutes")
        guard r.errors.isEmpty else { throw ValidationFailure(r.errors) }
        return minutes.map { Int($0) } ?? defaultSnoozeMinutes
    }

    /// `:dismiss` / `:open` take no members: a body, when sent, is `{}`.
    /// - Throws: `ValidationFailure`, as `drink`.
    public static func empty(_ body: JSONValue) throws(ValidationFailure) {
        var r = try reader(body)
        r.rejectOthers(writable: [], readOnly: [])
        guard r.errors.isEmpty else { throw ValidationFailure(r.errors) }
    }

    static func reader(_ body: JSONValue?) throws(ValidationFailure) -> FieldReader {
        guard let body else { return FieldReader(members: []) }
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        return FieldReader(members: members)
    }

    static func value(_ v: FieldReader.Value<Int64>, _ r: inout FieldReader, _ name: String) -> Int64? {
        switch v {
        case .value(let n): return n
        case .null:
            r.fail(name, .invalidType, "must be an integer (omit it for the default)")
            return nil
        case .absent, .invalid: return nil
        }
    }
}
