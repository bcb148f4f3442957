import SuplashJSON

/// An HS256 signing key: its key id (the JWS `kid` header, RFC 7515 §4.1.4) and secret.
/// Secrets should be at least 32 random bytes (RFC 7518 §3.2).
public struct JWTKey: Sendable {
    /// The key id written into the token header; verifiers look the secret up by it.
    public let id: String
    /// The HMAC-SHA-256 secret.
    public let secret: [UInt8]

    /// Creates a key.
    public init(id: String, secret: [UInt8]) {
        self.id = id
        self.secret = secret
    }
}

/// Why a token was rejected. Descriptions are fixed strings: they never include the token,
/// its claims or key ids, so they are safe to log.
public enum JWTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not three non-empty base64url segments, header or claims not a JSON object, a required
    /// claim (`exp`) missing or not an integer, `nbf`/`iat` not integers, unsupported `crit`,
    /// a `typ` other than `JWT`, or an oversized token.
    case malformed
    /// The header's `alg` is not exactly `HS256` (`none`, `HS512`, `RS256`, …).
    case unsupportedAlgorithm
    /// The header has no string `kid`, or names a key this verifier does not have.
    case unknownKey
    /// The signature does not match (or is not 32 bytes).
    case badSignature
    /// `exp` is at or before `now - leeway`.
    case expired
    /// `nbf` or `iat` is after `now + leeway`.
    case notYetValid

    /// A fixed, content-free description.
    public var description: String {
        switch self {
        case .malformed: return "JWT is malformed"
        case .unsupportedAlgorithm: return "JWT algorithm is not supported"
        case .unknownKey: return "JWT key id is unknown"
        case .badSignature: return "JWT signature is invalid"
        case .expired: return "JWT has expired"
        case .notYetValid: return "JWT is not yet valid"
        }
    }
}

/// Compact-serialised JWS/JWT with HMAC-SHA-256 (RFC 7515 §7.1, RFC 7519, RFC 7518 §3.2).
public enum JWT {
    /// Tokens longer than this (bytes) are rejected as malformed before any decoding.
    public static let maxTokenLength = 8192

    /// Signs `claims` (should be a JSON object, e.g. `{"sub":…,"sid":…,"iat":…,"exp":…}`)
    /// with `key`.
    ///
    /// - Returns: `base64url(header) "." base64url(claims) "." base64url(HMAC-SHA-256)` where the
    ///   header is `{"alg":"HS256","typ":"JWT","kid":"<key.id>"}`; claims are serialised compactly
    ///   in member order.
    public static func signHS256(claims: JSONValue, key: JWTKey) -> String {
        let header: JSONValue = .object([("alg", "HS256"), ("typ", "JWT"), ("kid", .string(key.id))])
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        let signature = HMACSHA256.authenticationCode(key: key.secret, message: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Clock skew allowed by `verifyHS256` unless told otherwise, seconds.
    public static let defaultLeewaySeconds: Int64 = 30

    /// Verifies an HS256 token and returns its claims object.
    ///
    /// Checks, in order: size and shape (exactly three non-empty base64url segments); the header
    /// is a JSON object (strict `JSONParser`: duplicate members are rejected) whose `alg` is
    /// exactly `"HS256"`, whose `typ` (if present) is `JWT`, with no `crit`; `kid` names a key in
    /// `keys`; the signature over `header.payload` matches in constant time; the claims are a
    /// JSON object; `exp` is present, an integer, and `exp > now - leewaySeconds`; `nbf` and
    /// `iat`, if present, are integers not after `now + leewaySeconds`.
    ///
    /// - Parameters:
    ///   - token: the compact JWS (e.g. from `Authorization: Bearer …`).
    ///   - keys: secrets by key id (current and recently rotated keys).
    ///   - now: the current time, Unix seconds.
    ///   - leewaySeconds: allowed clock skew, seconds (≥ 0).
    /// - Returns: the claims (`.object`).
    /// - Throws: `JWTError`.
    public static func verifyHS256(
        _ token: String, keys: [String: [UInt8]], now: Int64,
        leewaySeconds: Int64 = JWT.defaultLeewaySeconds
    ) throws(JWTError) -> JSONValue {
        try verify(token, algorithm: "HS256", key: { keys[$0] }, now: now, leewaySeconds: leewaySeconds) {
            secret, signature, signingInput in
            signature.count == 32
                && constantTimeEquals(HMACSHA256.authenticationCode(key: secret, message: signingInput), signature)
        }
    }

    /// The checks every JWS algorithm shares (RFC 7515, RFC 7519), in order: size and shape
    /// (exactly three non-empty base64url segments); the header is a JSON object (strict
    /// `JSONParser`) whose `alg` is exactly `algorithm`, whose `typ` (if present) is `JWT`,
    /// with no `crit`; `kid` names a key (`key(kid)`); `verifySignature(key, signature,
    /// signingInput)` accepts the decoded signature over `header.payload`, before the claims
    /// are looked at; the claims are a JSON object; `exp` is present, an integer, and
    /// `exp > now - leewaySeconds` (without `requireExpiry`, checked only when present); `nbf`
    /// and `iat`, if present, are integers not after `now + leewaySeconds`. Times are Unix seconds.
    /// - Throws: `JWTError`.
    static func verify<Key>(
        _ token: String, algorithm: String, key: (String) -> Key?, now: Int64, leewaySeconds: Int64,
        requireExpiry: Bool = true,
        verifySignature: (Key, [UInt8], ArraySlice<UInt8>) -> Bool
    ) throws(JWTError) -> JSONValue {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxTokenLength else { throw .malformed }
        let segments = bytes.split(separator: 0x2E, maxSplits: 3, omittingEmptySubsequences: false)
        guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty }) else { throw .malformed }

        // Header.
        guard let headerBytes = Base64URL.decode(bytes: segments[0]),
            let header = try? JSONParser.parse(headerBytes, maxDepth: 8),
            case .object = header
        else { throw .malformed }
        guard case .string(let alg)? = header["alg"] else { throw .malformed }
        guard alg == algorithm else { throw .unsupportedAlgorithm }
        if header["crit"] != nil { throw .malformed }
        if let typ = header["typ"] {
            guard case .string(let t) = typ, t.uppercased() == "JWT" else { throw .malformed }
        }
        guard case .string(let kid)? = header["kid"], let verifyingKey = key(kid) else { throw .unknownKey }

        // Signature, before looking at the claims.
        guard let signature = Base64URL.decode(bytes: segments[2]),
            verifySignature(verifyingKey, signature, bytes[..<segments[1].endIndex])
        else { throw .badSignature }

        // Claims.
        guard let payloadBytes = Base64URL.decode(bytes: segments[1]),
            let claims = try? JSONParser.parse(payloadBytes, maxDepth: 16),
            case .object = claims
        else { throw .malformed }
        let leeway = max(0, leewaySeconds)
        if requireExpiry || claims["exp"] != nil {
            guard let exp = claims["exp"], let expiry = integer(exp) else { throw .malformed }
            let (earliest, underflow) = now.subtractingReportingOverflow(leeway)
            guard underflow || expiry > earliest else { throw .expired }
        }
        let (latest, overflow) = now.addingReportingOverflow(leeway)
        for name in ["nbf", "iat"] {
            guard let value = claims[name] else { continue }
            guard let seconds = integer(value) else { throw .malformed }
            if !overflow && seconds > latest { throw .notYetValid }
        }
        return claims
    }

    /// A NumericDate claim as whole seconds: a JSON number with an integral value that fits Int64.
    private static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let n) = value else { return nil }
        return n.int64Value
    }
}
