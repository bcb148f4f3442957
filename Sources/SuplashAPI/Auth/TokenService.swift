import SuplashCrypto
import SuplashJSON

/// Issues and verifies access tokens (HS256 JWT, RFC 7519; spec §3) and mints refresh
/// tokens (256-bit random, stored only as SHA-256).
public struct TokenService: Sendable {
    /// Signing key; `kid` lets a later key rotation keep old tokens verifiable.
    public let signingKey: JWTKey
    /// Keys accepted for verification, by `kid` (the signing key plus retired ones).
    public let verificationKeys: [String: [UInt8]]
    /// Access-token lifetime in seconds (default 3600).
    public let accessTokenTTL: Int64
    /// Refresh-token lifetime in seconds (default 30 days).
    public let refreshTokenTTL: Int64
    /// Access tokens already verified, by their text (shared by copies of this value).
    let verifiedTokens = VerifiedTokenCache()

    /// - Parameter secret: ≥ 32 random bytes; `kid` is derived from its SHA-256.
    public init(secret: [UInt8], accessTokenTTL: Int64 = 3600, refreshTokenTTL: Int64 = 30 * 86_400) {
        let kid = String(SHA256.hex(secret).prefix(16))
        self.signingKey = JWTKey(id: kid, secret: secret)
        self.verificationKeys = [kid: secret]
        self.accessTokenTTL = accessTokenTTL
        self.refreshTokenTTL = refreshTokenTTL
    }

    /// A signed access token with claims `{sub, sid, iat, exp}`; `now` in ms.
    public func accessToken(userID: String, sessionID: String, now: Int64) -> String {
        let iat = now / 1000
        let claims: JSONValue = .object([
            ("sub", .string(userID)),
            ("sid", .string(sessionID)),
            ("iat", .number(JSONNumber(iat))),
            ("exp", .number(JSONNumber(iat + accessTokenTTL))),
        ])
        return JWT.signHS256(claims: claims, key: signingKey)
    }

    /// Verifies signature, algorithm, `kid` and expiry; returns `(sub, sid)`.
    /// - Throws: `APIError.invalidToken()`.
    public func verifyAccessToken(_ token: String, now: Int64) throws(APIError) -> (userID: String, sessionID: String) {
        guard let claims = try? JWT.verifyHS256(token, keys: verificationKeys, now: now / 1000),
            let sub = claims["sub"]?.stringValue, let sid = claims["sid"]?.stringValue
        else {
            throw APIError.invalidToken()
        }
        return (sub, sid)
    }

    /// A new opaque refresh token (base64url of 32 random bytes) and its SHA-256.
    public func newRefreshToken() -> (token: String, hash: [UInt8]) {
        let token = Base64URL.encode(SecureRandom.bytes(32))
        return (token, SHA256.hash(Array(token.utf8)))
    }

    /// The stored form of a presented refresh token.
    public func hashRefreshToken(_ token: String) -> [UInt8] {
        SHA256.hash(Array(token.utf8))
    }

    /// The `session` object of spec §3: `{accessToken, refreshToken, tokenType, expiresIn}`.
    public func sessionJSON(userID: String, sessionID: String, refreshToken: String, now: Int64) -> JSONValue {
        .object([
            ("accessToken", .string(accessToken(userID: userID, sessionID: sessionID, now: now))),
            ("refreshToken", .string(refreshToken)),
            ("tokenType", .string("Bearer")),
            ("expiresIn", .number(JSONNumber(accessTokenTTL))),
        ])
    }
}
