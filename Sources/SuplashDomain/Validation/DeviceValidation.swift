import SuplashJSON

/// Validation of device registrations (spec §9 "Devices", §2 field codes). Pure: the caller
/// passes the configured bundle ids (`apns.bundleIds`).
public enum DeviceValidation {
    /// Members of a registration body.
    public static let writableFields: Set<String> = ["platform", "bundleId", "environment", "locale", "appVersion", "tokens"]
    /// Members of a device document the server computes (`read_only_field`).
    public static let readOnlyFields: Set<String> = ["id", "pushTypes", "createdAt", "updatedAt", "lastSeenAt"]

    /// The registration in `body`, or every bad field at once.
    ///
    /// - `platform`, `environment`: required enum values; `bundleId`: required, a reverse-DNS
    ///   id (`isBundleID`) and, when `allowedBundleIDs` is not empty, one of them (compared code
    ///   point by code point), else `invalid_format`.
    /// - `locale`, `appVersion`: optional (absent or `null` = none); see `isLocale`,
    ///   `isAppVersion`.
    /// - `tokens`: required array (may be empty: the device gets no pushes) of at most one
    ///   `{pushType, token}` per push type (a repeat is `invalid_format` at its `pushType`);
    ///   `token` is 16–200 hex digits, even in number, either case; a `complication` token
    ///   only on `watchos` (PushKit complication pushes reach watchOS apps only).
    /// - Throws: `ValidationFailure` (422 `validation_failed`).
    public static func registration(_ body: JSONValue, allowedBundleIDs: Set<String>) throws(ValidationFailure)
        -> DeviceRegistration
    {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: writableFields, readOnly: readOnlyFields)
        let platform = r.oneOf("platform", DevicePlatform.allCases.map(\.rawValue), required: true).value
            .flatMap(DevicePlatform.init(rawValue:))
        let environment = r.oneOf("environment", PushEnvironment.allCases.map(\.rawValue), required: true).value
            .flatMap(PushEnvironment.init(rawValue:))
        var bundleID: String?
        if let id = r.string("bundleId", minLength: 1, maxLength: 155, required: true).value {
            if !isBundleID(id) {
                r.fail("bundleId", .invalidFormat, "must be a bundle id (letters, digits, '-' and '.', at least two parts)")
            } else if !allowedBundleIDs.isEmpty && !allowedBundleIDs.containsCodePoints(id) {
                r.fail("bundleId", .invalidFormat, "must be one of the server's bundle ids (apns.bundleIds)")
            } else {
                bundleID = id
            }
        }
        var locale: String?
        if let s = r.string("locale", minLength: 1, maxLength: 35).value {
            if isLocale(s) { locale = s } else { r.fail("locale", .invalidFormat, "must be a language tag such as tr-TR") }
        }
        var appVersion: String?
        if let s = r.string("appVersion", minLength: 1, maxLength: 32).value {
            if isAppVersion(s) {
                appVersion = s
            } else {
                r.fail("appVersion", .invalidFormat, "must be printable ASCII")
            }
        }
        let tokens = readTokens(&r, platform: platform)
        guard r.errors.isEmpty, let platform, let bundleID, let environment, let tokens else {
            throw ValidationFailure(r.errors)
        }
        return DeviceRegistration(
            platform: platform, bundleID: bundleID, environment: environment, locale: locale, appVersion: appVersion,
            tokens: tokens)
    }

    /// `tokens`: nil after recording its errors in `r`.
    private static func readTokens(_ r: inout FieldReader, platform: DevicePlatform?) -> [PushToken]? {
        guard let raw = r.member("tokens"), raw != .null else {
            r.fail("tokens", .required, "required")
            return nil
        }
        guard case .array(let items) = raw else {
            r.fail("tokens", .invalidType, "must be an array")
            return nil
        }
        guard items.count <= PushType.allCases.count else {
            r.fail("tokens", .tooLong, "at most \(PushType.allCases.count) tokens, one per push type")
            return nil
        }
        var tokens: [PushToken] = []
        var ok = true
        for (index, item) in items.enumerated() {
            let prefix = r.pointer("tokens") + "/\(index)"
            guard case .object(let members) = item else {
                r.fail(pointer: prefix, .invalidType, "must be an object")
                ok = false
                continue
            }
            var t = FieldReader(members: members, prefix: prefix)
            t.rejectOthers(writable: ["pushType", "token"], readOnly: [])
            let pushType = t.oneOf("pushType", PushType.allCases.map(\.rawValue), required: true).value
                .flatMap(PushType.init(rawValue:))
            let bytes = t.formatted("token", required: true, formatMessage: "must be 16 to 200 hex digits", parse: tokenBytes)
                .value
            if let pushType {
                if tokens.contains(where: { $0.pushType == pushType }) {
                    t.fail("pushType", .invalidFormat, "each push type at most once")
                } else if pushType == .complication, let platform, platform != .watchos {
                    t.fail("pushType", .invalidFormat, "complication tokens are for watchos devices")
                }
            }
            for e in t.errors { r.fail(pointer: e.pointer, e.code, e.message) }
            if let pushType, let bytes, t.errors.isEmpty {
                tokens.append(PushToken(pushType: pushType, token: bytes))
            } else {
                ok = false
            }
        }
        return ok ? tokens : nil
    }

    /// The bytes of a hex token (either case): an even number of hex digits within
    /// `DeviceRules.tokenHexDigits`, else nil.
    public static func tokenBytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard DeviceRules.tokenHexDigits.contains(digits.count), digits.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// A bundle id as Apple allows it: 1–155 ASCII letters, digits, `-` and `.`, at least two
    /// non-empty dot-separated parts (`app.suplash.ios`).
    public static func isBundleID(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard (1...155).contains(bytes.count),
            bytes.allSatisfy({ isASCIILetterOrDigit($0) || $0 == 0x2D || $0 == 0x2E })
        else { return false }
        let parts = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        return parts.count >= 2 && parts.allSatisfy { !$0.isEmpty }
    }

    /// A language tag in the shape of BCP 47 (RFC 5646) as Apple platforms report it: subtags
    /// of 1–8 ASCII letters or digits joined by `-` or `_`, the first 2–3 letters
    /// (`tr`, `en-US`, `zh-Hans-CN`, `en_GB`); at most 35 characters.
    public static func isLocale(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard bytes.count <= 35 else { return false }
        let subtags = bytes.split(omittingEmptySubsequences: false) { $0 == 0x2D || $0 == 0x5F }
        guard let first = subtags.first, (2...3).contains(first.count),
            first.allSatisfy({ isASCIILetterOrDigit($0) && $0 > 0x39 })
        else { return false }
        return subtags.allSatisfy { (1...8).contains($0.count) && $0.allSatisfy(isASCIILetterOrDigit) }
    }

    /// An app version string: 1–32 printable ASCII characters (`1.4.2`, `1.4.2 (210)`).
    public static func isAppVersion(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        return (1...32).contains(bytes.count) && bytes.allSatisfy { (0x20...0x7E).contains($0) }
    }

    private static func isASCIILetterOrDigit(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
    }
}
