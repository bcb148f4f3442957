/// Per-field validation codes (spec §2, the `errors[].code` of a 422 `validation_failed`).
public enum FieldErrorCode: String, Sendable, Hashable, CaseIterable {
    case required
    case invalidType = "invalid_type"
    case invalidFormat = "invalid_format"
    case outOfRange = "out_of_range"
    case tooLong = "too_long"
    case unknownField = "unknown_field"
    case readOnlyField = "read_only_field"
}

/// One bad field: an RFC 6901 JSON pointer into the request body (`/amountMl`,
/// `/cupSizesMl/2`), a stable code, and a message that names only the field and its
/// limits — never the submitted value (spec §2).
public struct FieldError: Sendable, Hashable {
    public var pointer: String
    public var code: FieldErrorCode
    public var message: String

    public init(_ pointer: String, _ code: FieldErrorCode, _ message: String) {
        self.pointer = pointer
        self.code = code
        self.message = message
    }
}

/// Thrown by domain validation: every bad field of one document, reported together
/// (spec §2, HTTP 422 `validation_failed`).
public struct ValidationFailure: Error, Sendable {
    public var errors: [FieldError]

    public init(_ errors: [FieldError]) { self.errors = errors }
}
