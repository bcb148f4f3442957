import SuplashJSON

/// Validation of water entries (spec §4 entries table). Used by the REST routes and,
/// later, by sync pushes — one copy of the rules.
public enum EntryValidation {
    /// Members a client may write.
    public static let writableFields: Set<String> = ["amountMl", "loggedAt", "source", "healthKitUUID", "note"]
    /// Members the server owns.
    public static let readOnlyFields: Set<String> = ["createdAt", "updatedAt", "version", "deleted"]
    /// 2000-01-01T00:00:00Z in milliseconds: the earliest accepted `loggedAt`.
    public static let earliestLoggedAt: Int64 = 946_684_800_000
    /// How far `loggedAt` may lie in the future: 5 minutes, in milliseconds.
    public static let maxFutureSkewMillis: Int64 = 5 * 60 * 1000

    /// A validated create request: the optional client id and the content.
    public struct Create: Sendable, Equatable {
        /// Lower-case UUID, or nil for "server generates a UUIDv7".
        public var id: String?
        public var content: WaterEntryContent
    }

    /// Reads a create body `{id?, amountMl, loggedAt, source?, healthKitUUID?, note?}`.
    /// - Parameter now: the server clock, ms since the epoch (for the 5-minute rule).
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func create(_ body: JSONValue, now: Int64) throws(ValidationFailure) -> Create {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields.union(["id"]), readOnly: readOnlyFields)
        let id = r.formatted("id", formatMessage: "must be a UUID", parse: UUIDText.normalized).value
        let amount = r.int("amountMl", in: 1...5000, required: true).value
        let loggedAt = readLoggedAt(&r, required: true, now: now).value
        let source = r.oneOf("source", EntrySource.allCases.map(\.rawValue)).value.flatMap(EntrySource.init(rawValue:))
        let hk = r.formatted("healthKitUUID", formatMessage: "must be a UUID", parse: UUIDText.normalized).value
        let note = r.string("note", maxLength: 280).value
        guard r.errors.isEmpty, let amount, let loggedAt else { throw ValidationFailure(r.errors) }
        return Create(
            id: id,
            content: WaterEntryContent(
                amountMl: Int(amount), loggedAt: loggedAt,
                source: source ?? .api, healthKitUUID: hk, note: note))
    }

    /// Applies a merge patch to an entry's content. `null` resets optional fields
    /// (`source` → `api`, `healthKitUUID`/`note` → none); required fields cannot be null.
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func applyMergePatch(
        _ patch: JSONValue, to content: WaterEntryContent,
        now: Int64
    ) throws(ValidationFailure) -> WaterEntryContent {
        guard case .object(let members) = patch else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields, readOnly: readOnlyFields.union(["id"]))
        var c = content
        switch r.int("amountMl", in: 1...5000) {
        case .value(let v): c.amountMl = Int(v)
        case .null: r.fail("amountMl", .required, "required")
        default: break
        }
        switch readLoggedAt(&r, required: false, now: now) {
        case .value(let v): c.loggedAt = v
        case .null: r.fail("loggedAt", .required, "required")
        default: break
        }
        switch r.oneOf("source", EntrySource.allCases.map(\.rawValue)) {
        case .value(let s): c.source = EntrySource(rawValue: s) ?? .api
        case .null: c.source = .api
        default: break
        }
        switch r.formatted("healthKitUUID", formatMessage: "must be a UUID", parse: UUIDText.normalized) {
        case .value(let s): c.healthKitUUID = s
        case .null: c.healthKitUUID = nil
        default: break
        }
        switch r.string("note", maxLength: 280) {
        case .value(let s): c.note = s
        case .null: c.note = nil
        default: break
        }
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return c
    }

    private static func readLoggedAt(_ r: inout FieldReader, required: Bool, now: Int64) -> FieldReader.Value<Int64> {
        let v = r.formatted(
            "loggedAt", required: required, formatMessage: "must be an RFC 3339 timestamp",
            parse: RFC3339.parse)
        if case .value(let t) = v {
            if t < earliestLoggedAt {
                r.fail("loggedAt", .outOfRange, "must not be before 2000-01-01")
                return .invalid
            }
            if t > now + maxFutureSkewMillis {
                r.fail("loggedAt", .outOfRange, "must not be more than 5 minutes in the future")
                return .invalid
            }
        }
        return v
    }
}
