import SuplashCrypto

extension TokenService {
    /// Like `verifyAccessToken`, and also returns the token's `iat` (Unix seconds) so the
    /// per-user revocation cut-off of `RevocationView` can be applied (spec §3).
    /// - Throws: `APIError.invalidToken()` (also when `iat` is missing).
    ///
    /// A token verified before is answered from `verifiedTokens` (exact token text; the
    /// expiry and not-before checks are repeated), see `VerifiedTokenCache`.
    public func verifyAccessTokenIssuedAt(_ token: String, now: Int64) throws(APIError)
        -> (userID: String, sessionID: String, issuedAt: Int64)
    {
        let seconds = now / 1000
        if let cached = verifiedTokens.claims(for: token, now: seconds, leeway: JWT.defaultLeewaySeconds) {
            return (cached.userID, cached.sessionID, cached.issuedAt)
        }
        guard let claims = try? JWT.verifyHS256(token, keys: verificationKeys, now: seconds),
            let sub = claims["sub"]?.stringValue, let sid = claims["sid"]?.stringValue,
            case .number(let iat)? = claims["iat"], let issuedAt = iat.int64Value
        else {
            throw APIError.invalidToken()
        }
        // verifyHS256 guarantees an integral `exp`, and `nbf` integral when present.
        if case .number(let exp)? = claims["exp"], let expiresAt = exp.int64Value {
            var notBefore: Int64?
            if case .number(let nbf)? = claims["nbf"] { notBefore = nbf.int64Value }
            verifiedTokens.store(
                token,
                VerifiedTokenCache.Claims(
                    userID: sub, sessionID: sid, issuedAt: issuedAt,
                    expiresAt: expiresAt, notBefore: notBefore))
        }
        return (sub, sid, issuedAt)
    }
}
