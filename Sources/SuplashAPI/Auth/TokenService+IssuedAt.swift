import SuplashCrypto

extension TokenService {
    /// Like `verifyAccessToken`, and also returns the token's `iat` (Unix seconds) so the
    /// per-user revocation cut-off of `RevocationView` can be applied (spec §3).
    /// - Throws: `APIError.invalidToken()` (also when `iat` is missing).
    public func verifyAccessTokenIssuedAt(_ token: String, now: Int64) throws(APIError)
        -> (userID: String, sessionID: String, issuedAt: Int64) {
        guard let claims = try? JWT.verifyHS256(token, keys: verificationKeys, now: now / 1000),
              let sub = claims["sub"]?.stringValue, let sid = claims["sid"]?.stringValue,
              case .number(let iat)? = claims["iat"], let issuedAt = iat.int64Value else {
            throw APIError.invalidToken()
        }
        return (sub, sid, issuedAt)
    }
}
