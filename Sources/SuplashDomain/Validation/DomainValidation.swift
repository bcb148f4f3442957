import Foundation
import SuplashJSON

/// Validation of `water_logs/{uid}/days/{date}` bodies (spec §4): `{maxTemperatureC?,
/// activeMinutes?}`; out-of-range values → 422.
public enum DayValidation {
    /// Members a client may write.
    public static let writableFields: Set<String> = ["maxTemperatureC", "activeMinutes"]
    /// Members the server owns.
    public static let readOnlyFields: Set<String> = ["date", "createdAt", "updatedAt", "version"]

    /// Reads a PUT body (the whole document: an omitted or null field is "none").
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func put(_ body: JSONValue) throws(ValidationFailure) -> DayContextContent {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields, readOnly: readOnlyFields)
        let t = r.number("maxTemperatureC", in: -50...60, maxDecimals: 2).value
        let m = r.int("activeMinutes", in: 0...1440).value
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return DayContextContent(maxTemperatureC: t, activeMinutes: m.map { Int($0) })
    }
}

/// Validation of bills (spec §4 bills table). One copy of the rules for REST and sync.
public enum BillValidation {
    /// Members a client may write.
    public static let writableFields: Set<String> = [
        "provider", "subscriberNo", "period", "consumptionM3", "amountMinor", "currency", "dueDate", "paidAt",
    ]
    /// Members the server owns (`status` is computed).
    public static let readOnlyFields: Set<String> = ["status", "createdAt", "updatedAt", "version", "deleted"]
    /// Largest `amountMinor` (2^53 − 1, exact in every JSON client).
    public static let maxAmountMinor: Int64 = 9_007_199_254_740_991

    /// A validated create request.
    public struct Create: Sendable, Equatable {
        /// Lower-case UUID, or nil for "server generates a UUIDv7".
        public var id: String?
        /// The bill's fields.
        public var content: BillContent
    }

    /// `ISKI`, `ASKI`, `IZSU`: 2–16 of `A–Z 0–9 _ -`, starting with a letter.
    public static func isProviderCode(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard (2...16).contains(b.count), (0x41...0x5A).contains(b[0]) else { return false }
        return b.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// ISO 4217 alphabetic codes: three upper-case letters that Foundation's currency list
    /// knows (`TRY`, `EUR`, `USD`).
    public static func isCurrencyCode(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count == 3, b.allSatisfy({ (0x41...0x5A).contains($0) }) else { return false }
        return knownCurrencies.isEmpty || knownCurrencies.contains(s)
    }

    static let knownCurrencies: Set<String> = Set(Locale.commonISOCurrencyCodes)

    /// Reads a create body `{id?, provider, subscriberNo, period, consumptionM3, amountMinor,
    /// currency?, dueDate, paidAt?}`.
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func create(_ body: JSONValue) throws(ValidationFailure) -> Create {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields.union(["id"]), readOnly: readOnlyFields)
        let id = r.formatted("id", formatMessage: "must be a UUID", parse: UUIDText.normalized).value
        let provider = readProvider(&r, required: true).value
        let subscriber = readSubscriber(&r, required: true).value
        let period = r.formatted("period", required: true, formatMessage: "must be YYYY-MM", parse: YearMonth.init(parsing:)).value
        let consumption = readConsumption(&r, required: true).value
        let amount = r.int("amountMinor", in: 0...maxAmountMinor, required: true).value
        let currency = readCurrency(&r).value
        let due = r.formatted(
            "dueDate", required: true, formatMessage: "must be YYYY-MM-DD",
            parse: LocalDate.init(parsing:)
        ).value
        let paidAt = r.formatted("paidAt", formatMessage: "must be an RFC 3339 timestamp", parse: RFC3339.parse).value
        guard r.errors.isEmpty, let provider, let subscriber, let period, let consumption, let amount, let due else {
            throw ValidationFailure(r.errors)
        }
        return Create(
            id: id,
            content: BillContent(
                provider: provider, subscriberNo: subscriber, period: period, consumptionMilliM3: consumption,
                amountMinor: amount, currency: currency ?? "TRY", dueDate: due, paidAt: paidAt))
    }

    /// Applies a JSON merge patch (RFC 7396): `null` resets `currency` to `TRY` and
    /// `paidAt` to unpaid; required fields cannot be null.
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func applyMergePatch(_ patch: JSONValue, to content: BillContent) throws(ValidationFailure) -> BillContent {
        guard case .object(let members) = patch else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields, readOnly: readOnlyFields.union(["id"]))
        var c = content
        func requiredNull(_ name: String, _ r: inout FieldReader) { r.fail(name, .required, "required") }
        switch readProvider(&r, required: false) {
        case .value(let v): c.provider = v
        case .null: requiredNull("provider", &r)
        default: break
        }
        switch readSubscriber(&r, required: false) {
        case .value(let v): c.subscriberNo = v
        case .null: requiredNull("subscriberNo", &r)
        default: break
        }
        switch r.formatted("period", formatMessage: "must be YYYY-MM", parse: YearMonth.init(parsing:)) {
        case .value(let v): c.period = v
        case .null: requiredNull("period", &r)
        default: break
        }
        switch readConsumption(&r, required: false) {
        case .value(let v): c.consumptionMilliM3 = v
        case .null: requiredNull("consumptionM3", &r)
        default: break
        }
        switch r.int("amountMinor", in: 0...maxAmountMinor) {
        case .value(let v): c.amountMinor = v
        case .null: requiredNull("amountMinor", &r)
        default: break
        }
        switch readCurrency(&r) {
        case .value(let v): c.currency = v
        case .null: c.currency = "TRY"
        default: break
        }
        switch r.formatted("dueDate", formatMessage: "must be YYYY-MM-DD", parse: LocalDate.init(parsing:)) {
        case .value(let v): c.dueDate = v
        case .null: requiredNull("dueDate", &r)
        default: break
        }
        switch r.formatted("paidAt", formatMessage: "must be an RFC 3339 timestamp", parse: RFC3339.parse) {
        case .value(let v): c.paidAt = v
        case .null: c.paidAt = nil
        default: break
        }
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return c
    }

    private static func readProvider(_ r: inout FieldReader, required: Bool) -> FieldReader.Value<String> {
        r.formatted(
            "provider", required: required,
            formatMessage: "must be an upper-case code of 2 to 16 characters (A-Z, 0-9, _ or -)",
            parse: { isProviderCode($0) ? $0 : nil })
    }

    private static func readSubscriber(_ r: inout FieldReader, required: Bool) -> FieldReader.Value<String> {
        let v = r.string("subscriberNo", minLength: 1, maxLength: 32, required: required)
        if case .value(let s) = v, s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            r.fail("subscriberNo", .invalidFormat, "must not contain control characters")
            return .invalid
        }
        return v
    }

    private static func readConsumption(_ r: inout FieldReader, required: Bool) -> FieldReader.Value<Int64> {
        switch r.number("consumptionM3", in: 0...100_000, maxDecimals: 3, required: required) {
        case .value(let d): return .value(Int64((d * 1000).rounded()))
        case .absent: return .absent
        case .null: return .null
        case .invalid: return .invalid
        }
    }

    private static func readCurrency(_ r: inout FieldReader) -> FieldReader.Value<String> {
        r.formatted(
            "currency", formatMessage: "must be an ISO 4217 currency code such as TRY",
            parse: { isCurrencyCode($0) ? $0 : nil })
    }
}
