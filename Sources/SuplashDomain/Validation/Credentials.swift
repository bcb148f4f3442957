import Foundation
import SuplashJSON

/// Sign-up and login input rules (spec §1 emails and passwords, §3).
public enum Credentials {
    /// Normalises an email as spec §1 says — trimmed, lower-cased with Unicode default
    /// case mapping (not locale-specific) — and returns it, or nil when it is not an
    /// acceptable address: ≤ 254 characters, exactly one `@`, a non-empty local part,
    /// a domain containing a dot (not at either end), no spaces or control characters.
    ///
    /// Unicode normalisation on purpose: the result is NFC, so the precomposed (NFC) and
    /// decomposed (NFD) spellings of one address are the same bytes — one account, also in
    /// the database's unique index on `users.email`, which compares bytes. Every writer of
    /// `users.email` (signup, Apple sign-in) stores this form; field names and enum values,
    /// by contrast, are never normalised (spec §1, docs/decisions.md).
    public static func normalizedEmail(_ raw: String) -> String? {
        // NFC first, so the same address typed with a precomposed or a combining accent is one
        // identity byte for byte (identity by id, never by text — but lookups are by bytes).
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased().precomposedStringWithCanonicalMapping
        guard !email.isEmpty, email.count <= 254 else { return nil }
        for scalar in email.unicodeScalars {
            if scalar.properties.isWhitespace || scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .format
            {
                return nil
            }
        }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return nil }
        let domain = parts[1]
        guard domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains("..") else {
            return nil
        }
        return email
    }

    /// The password in Unicode NFKC (NIST SP 800-63B §5.1.1.2), which is what gets hashed
    /// and compared.
    public static func normalizedPassword(_ raw: String) -> String {
        raw.precomposedStringWithCompatibilityMapping
    }

    /// True when the (normalised) password has 8–256 characters.
    public static func isAcceptablePassword(_ normalized: String) -> Bool {
        (8...256).contains(normalized.count)
    }

    /// A validated sign-up request.
    public struct SignUp: Sendable {
        public var email: String
        /// NFKC-normalised.
        public var password: String
        public var displayName: String?
    }

    /// Reads `{email, password, displayName?}` (spec §3 signup).
    /// - Throws: `ValidationFailure` listing every bad field.
    public static func signUp(_ body: JSONValue) throws(ValidationFailure) -> SignUp {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["email", "password", "displayName"], readOnly: [])
        let email = r.formatted(
            "email", required: true, formatMessage: "must be a valid email address",
            parse: normalizedEmail
        ).value
        var password: String?
        switch r.string("password", maxLength: Int.max, required: true) {
        case .value(let raw):
            let p = normalizedPassword(raw)
            if isAcceptablePassword(p) {
                password = p
            } else {
                r.fail("password", p.count > 256 ? .tooLong : .outOfRange, "must be 8 to 256 characters")
            }
        default: break
        }
        let displayName = r.string("displayName", maxLength: 80).value
        guard r.errors.isEmpty, let email, let password else { throw ValidationFailure(r.errors) }
        return SignUp(email: email, password: password, displayName: displayName)
    }

    /// Reads `{email, password}` for login. Shape errors are 422; a wrong email or
    /// password is not a validation error (it is `invalid_credentials`), so the email
    /// is only normalised here, and nil means "no such account can exist".
    public static func login(_ body: JSONValue) throws(ValidationFailure) -> (email: String?, password: String) {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["email", "password"], readOnly: [])
        let email = r.string("email", maxLength: 1024, required: true).value
        let password = r.string("password", maxLength: 4096, required: true).value
        guard r.errors.isEmpty, let email, let password else { throw ValidationFailure(r.errors) }
        return (normalizedEmail(email), normalizedPassword(password))
    }
}
