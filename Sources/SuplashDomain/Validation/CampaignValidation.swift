import SuplashJSON

/// The body of `POST /v1/admin/notifications` (spec §8): `{segment: morning|noon|evening|all,
/// texts: {language: text}, sendAt?}`.
public enum CampaignValidation {
    /// Longest text, characters.
    public static let maxTextLength = 240

    /// - Throws: `ValidationFailure` (`required`, `invalid_type`, `invalid_format` for a segment
    ///   or `sendAt` that does not parse or a language code that is not 2–3 lower-case letters,
    ///   `too_long`, `unknown_field`).
    public static func create(_ body: JSONValue) throws(ValidationFailure) -> NewCampaign {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["segment", "texts", "sendAt"], readOnly: [])
        let segment = r.oneOf("segment", CampaignSegment.allCases.map(\.rawValue), required: true).value
            .flatMap(CampaignSegment.init(rawValue:))
        let sendAt = r.formatted("sendAt", formatMessage: "must be an RFC 3339 timestamp") {
            CampaignSchedule.wallTime(ofRFC3339: $0) != nil ? $0 : nil
        }.value
        var texts: [String: String] = [:]
        switch members.first(where: { $0.0.hasSameCodePoints(as: "texts") })?.1 {
        case nil, .null?:
            r.fail("texts", .required, "required")
        case .object(let byLanguage)?:
            if byLanguage.isEmpty { r.fail("texts", .required, "at least one language") }
            for (language, value) in byLanguage {
                let pointer = "/texts/" + language.map { $0 == "~" ? "~0" : $0 == "/" ? "~1" : String($0) }.joined()
                guard (2...3).contains(language.utf8.count), language.utf8.allSatisfy({ (0x61...0x7A).contains($0) }) else {
                    r.fail(pointer: pointer, .invalidFormat, "a language code: 2–3 lower-case letters")
                    continue
                }
                guard case .string(let text) = value else {
                    r.fail(pointer: pointer, .invalidType, "must be a string")
                    continue
                }
                guard !text.isEmpty else {
                    r.fail(pointer: pointer, .required, "must not be empty")
                    continue
                }
                guard text.count <= maxTextLength else {
                    r.fail(pointer: pointer, .tooLong, "at most \(maxTextLength) characters")
                    continue
                }
                texts[language] = text
            }
        default:
            r.fail("texts", .invalidType, "must be an object of language → text")
        }
        guard r.errors.isEmpty, let segment else { throw ValidationFailure(r.errors) }
        return NewCampaign(segment: segment, texts: texts, sendAt: sendAt)
    }
}
