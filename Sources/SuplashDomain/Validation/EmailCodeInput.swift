import SuplashJSON

/// Bodies of the email-code routes (spec §3: `/email/verify`, `/password/forgot`,
/// `/password/reset`) and of `/apple`.
public enum EmailCodeInput {
    /// Reads `{code}`: exactly six ASCII digits.
    /// - Throws: `ValidationFailure` (`/code` required, invalid_type or invalid_format; unknown fields).
    public static func verify(_ body: JSONValue) throws(ValidationFailure) -> String {
        var r = try reader(body, fields: ["code"])
        let code = readCode(&r)
        guard r.errors.isEmpty, let code else { throw ValidationFailure(r.errors) }
        return code
    }

    /// Reads `{email}` for `/password/forgot`. The email is normalised; nil when it cannot be
    /// an address (the route still answers 202: no account can have it).
    /// - Throws: `ValidationFailure` for shape errors only.
    public static func forgot(_ body: JSONValue) throws(ValidationFailure) -> String? {
        var r = try reader(body, fields: ["email"])
        let email = r.string("email", maxLength: 1024, required: true).value
        guard r.errors.isEmpty, let email else { throw ValidationFailure(r.errors) }
        return Credentials.normalizedEmail(email)
    }

    /// A validated `/password/reset` body.
    public struct Reset: Sendable {
        /// Normalised email, or nil when it cannot be an address.
        public var email: String?
        /// Six ASCII digits.
        public var code: String
        /// NFKC-normalised, 8–256 characters.
        public var newPassword: String
    }

    /// Reads `{email, code, newPassword}`.
    /// - Throws: `ValidationFailure` listing every bad field (`newPassword` 8–256 characters).
    public static func reset(_ body: JSONValue) throws(ValidationFailure) -> Reset {
        var r = try reader(body, fields: ["email", "code", "newPassword"])
        let email = r.string("email", maxLength: 1024, required: true).value
        let code = readCode(&r)
        var password: String?
        if case .value(let raw) = r.string("newPassword", maxLength: Int.max, required: true) {
            let p = Credentials.normalizedPassword(raw)
            if Credentials.isAcceptablePassword(p) {
                password = p
            } else {
                r.fail("newPassword", p.count > 256 ? .tooLong : .outOfRange, "must be 8 to 256 characters")
            }
        }
        guard r.errors.isEmpty, let email, let code, let password else { throw ValidationFailure(r.errors) }
        return Reset(email: Credentials.normalizedEmail(email), code: code, newPassword: password)
    }

    /// A validated `/apple` body.
    public struct Apple: Sendable {
        public var identityToken: String
        /// The raw nonce whose SHA-256 hex the token's `nonce` claim must equal.
        public var nonce: String?
        public var displayName: String?
        /// The app's single-use authorization code (valid 5 minutes), exchanged at Apple.
        public var authorizationCode: String?
    }

    /// Reads `{identityToken, authorizationCode?, nonce?, displayName?}` (token ≤ 8192 bytes,
    /// code 1–1024, nonce 1–512, name ≤ 80).
    /// - Throws: `ValidationFailure`.
    public static func apple(_ body: JSONValue) throws(ValidationFailure) -> Apple {
        var r = try reader(body, fields: ["identityToken", "authorizationCode", "nonce", "displayName"])
        let token = r.string("identityToken", minLength: 1, maxLength: 8192, required: true).value
        let code = r.string("authorizationCode", minLength: 1, maxLength: 1024).value
        let nonce = r.string("nonce", minLength: 1, maxLength: 512).value
        let displayName = r.string("displayName", maxLength: 80).value
        guard r.errors.isEmpty, let token else { throw ValidationFailure(r.errors) }
        return Apple(identityToken: token, nonce: nonce, displayName: displayName, authorizationCode: code)
    }

    private static func reader(_ body: JSONValue, fields: Set<String>) throws(ValidationFailure) -> FieldReader {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: fields, readOnly: [])
        return r
    }

    private static func readCode(_ r: inout FieldReader) -> String? {
        guard case .value(let code) = r.string("code", maxLength: 64, required: true) else { return nil }
        guard code.utf8.count == 6, code.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            r.fail("code", .invalidFormat, "must be six digits")
            return nil
        }
        return code
    }
}
