import SuplashJSON

extension JWT {
    /// The `kid` of a compact JWS header, read without verifying anything (to decide whether
    /// a key set must be refreshed). nil when the token is malformed or has no string `kid`.
    public static func unverifiedKeyID(_ token: String) -> String? {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxTokenLength, let dot = bytes.firstIndex(of: 0x2E),
              let headerBytes = Base64URL.decode(bytes: bytes[..<dot]),
              let header = try? JSONParser.parse(headerBytes, maxDepth: 8) else { return nil }
        return header["kid"]?.stringValue
    }

    /// Verifies an RS256 token (RSASSA-PKCS1-v1_5 with SHA-256; RFC 7515, RFC 7518 §3.3,
    /// RFC 7519) and returns its claims object.
    ///
    /// Checks, in order: size and shape (three non-empty base64url segments); the header is a
    /// JSON object whose `alg` is exactly `"RS256"` (so `none` and `HS256` key confusion are
    /// refused), with no `crit`, `typ` absent or `JWT`; `kid` names a key of `keys`; the
    /// signature over `header.payload` verifies; the claims are an object; `exp` is an integer
    /// with `exp > now - leewaySeconds`; `nbf` and `iat`, when present, are integers not after
    /// `now + leewaySeconds`.
    ///
    /// - Parameters:
    ///   - token: the compact JWS (e.g. an Apple identity token).
    ///   - keys: public keys by key id (a JWKS, see `JWKS.rsaKeys(from:)`).
    ///   - now: the current time, Unix seconds.
    ///   - leewaySeconds: allowed clock skew, seconds (≥ 0).
    /// - Returns: the claims (`.object`).
    /// - Throws: `JWTError` (`.unsupportedAlgorithm` for any `alg` but RS256).
    public static func verifyRS256(_ token: String, keys: [String: RSAPublicKey], now: Int64,
                                   leewaySeconds: Int64 = 60) throws(JWTError) -> JSONValue {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxTokenLength else { throw .malformed }
        let segments = bytes.split(separator: 0x2E, maxSplits: 3, omittingEmptySubsequences: false)
        guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty }) else { throw .malformed }

        guard let headerBytes = Base64URL.decode(bytes: segments[0]),
              let header = try? JSONParser.parse(headerBytes, maxDepth: 8),
              case .object = header else { throw .malformed }
        guard case .string(let alg)? = header["alg"] else { throw .malformed }
        guard alg == "RS256" else { throw .unsupportedAlgorithm }
        if header["crit"] != nil { throw .malformed }
        if let typ = header["typ"] {
            guard case .string(let t) = typ, t.uppercased() == "JWT" else { throw .malformed }
        }
        guard case .string(let kid)? = header["kid"], let key = keys[kid] else { throw .unknownKey }

        guard let signature = Base64URL.decode(bytes: segments[2]) else { throw .badSignature }
        let signingInput = bytes[..<segments[1].endIndex]
        guard key.verifyPKCS1SHA256(signature: signature, message: signingInput) else { throw .badSignature }

        guard let payloadBytes = Base64URL.decode(bytes: segments[1]),
              let claims = try? JSONParser.parse(payloadBytes, maxDepth: 16),
              case .object = claims else { throw .malformed }
        let leeway = max(0, leewaySeconds)
        guard case .number(let expNumber)? = claims["exp"], let expiry = expNumber.int64Value else { throw .malformed }
        let (earliest, underflow) = now.subtractingReportingOverflow(leeway)
        guard underflow || expiry > earliest else { throw .expired }
        let (latest, overflow) = now.addingReportingOverflow(leeway)
        for name in ["nbf", "iat"] {
            guard let value = claims[name] else { continue }
            guard case .number(let n) = value, let seconds = n.int64Value else { throw .malformed }
            if !overflow && seconds > latest { throw .notYetValid }
        }
        return claims
    }
}
