import SuplashJSON

extension JWT {
    /// The `kid` of a compact JWS header, read without verifying anything (to decide whether
    /// a key set must be refreshed). nil when the token is malformed or has no string `kid`.
    public static func unverifiedKeyID(_ token: String) -> String? {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxTokenLength, let dot = bytes.firstIndex(of: 0x2E),
            let headerBytes = Base64URL.decode(bytes: bytes[..<dot]),
            let header = try? JSONParser.parse(headerBytes, maxDepth: 8)
        else { return nil }
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
    ///   - requireExpiry: false for tokens without `exp` (Apple's server-to-server
    ///     notifications); an `exp` present is still checked.
    /// - Returns: the claims (`.object`).
    /// - Throws: `JWTError` (`.unsupportedAlgorithm` for any `alg` but RS256).
    public static func verifyRS256(
        _ token: String, keys: [String: RSAPublicKey], now: Int64,
        leewaySeconds: Int64 = 60, requireExpiry: Bool = true
    ) throws(JWTError) -> JSONValue {
        try verify(
            token, algorithm: "RS256", key: { keys[$0] }, now: now, leewaySeconds: leewaySeconds,
            requireExpiry: requireExpiry
        ) {
            key, signature, signingInput in
            key.verifyPKCS1SHA256(signature: signature, message: signingInput)
        }
    }
}
