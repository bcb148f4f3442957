import SuplashDomain

/// Turns `Authorization: Bearer …` into a `Principal` (spec §3, RFC 6750).
public struct Authenticator: Sendable {
    let tokens: TokenService
    let revocations: RevocationView
    let adminKeys: AdminKeyCache
    /// The per-user layer of spec §7 (nil = off).
    let perUserLimit: RateLimitLayer?
    /// Asks the database whether a session is still live (nil = the revocation view is enough).
    let sessionCheck: (@Sendable (_ sessionID: String, _ userID: String) throws -> Bool)?

    /// - Parameters:
    ///   - sessionCheck: with several instances on one database (PostgreSQL), returns whether
    ///     session `sessionID` of `userID` exists and is not revoked. It runs for every user
    ///     token the revocation view lets through: the view hears other instances'
    ///     revocations through `NOTIFY`, which arrives asynchronously, so without this a
    ///     request sent to B right after a logout on A answered could still pass. A false
    ///     answer also enters the view. nil on SQLite (one instance: the view is exact).
    public init(tokens: TokenService, revocations: RevocationView, adminKeys: AdminKeyCache,
                perUserLimit: RateLimitLayer? = nil,
                sessionCheck: (@Sendable (_ sessionID: String, _ userID: String) throws -> Bool)? = nil) {
        self.tokens = tokens
        self.revocations = revocations
        self.adminKeys = adminKeys
        self.perUserLimit = perUserLimit
        self.sessionCheck = sessionCheck
    }

    /// The caller of `request`, counted against the per-user limit.
    /// - Throws: 429 `rate_limited` past the per-user limit, 401 `unauthenticated` without a bearer token, 401 `invalid_token` for a
    ///   bad, expired, tampered or revoked one; 503 when admin keys (or, with `sessionCheck`, sessions) cannot be read.
    public func authenticate(_ request: APIRequest) throws(APIError) -> Principal {
        let principal = try identify(request)
        if case .user(let userID, _) = principal, let layer = perUserLimit {
            let decision = layer.take(userID, now: RateLimits.now())
            if !decision.allowed {
                throw APIError(status: 429, code: "rate_limited", title: "Too Many Requests",
                               detail: "Too many requests for this user; retry after the time in Retry-After.",
                               headers: [("Retry-After", String(decision.resetSeconds)),
                                         ("RateLimit-Policy", layer.policyHeader), ("RateLimit", layer.header(decision))])
            }
        }
        return principal
    }

    /// The caller of `request` without counting it against the per-user limit (the
    /// Idempotency-Key dispatch names the caller before the handler authenticates, so a
    /// keyed request counts once, not twice).
    /// - Throws: as `authenticate`, except 429.
    public func identify(_ request: APIRequest) throws(APIError) -> Principal {
        guard let header = request.header("Authorization") else { throw APIError.unauthorized() }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw APIError.unauthorized() }
        let token = String(parts[1].trimmingASCIISpaces())
        if token.hasPrefix(AdminKeyFormat.prefix) {
            let name: String?
            do { name = try adminKeys.name(forKey: token) } catch { throw APIError.unavailable() }
            guard let name else { throw APIError.invalidToken() }
            return .admin(name: name)
        }
        let (userID, sessionID, issuedAt) = try tokens.verifyAccessTokenIssuedAt(token, now: request.now)
        guard !revocations.isRevoked(sessionID: sessionID), !revocations.isRevoked(userID: userID),
              !revocations.isRevoked(userID: userID, issuedAt: issuedAt) else { throw APIError.invalidToken() }
        if let sessionCheck {
            let live: Bool
            do { live = try sessionCheck(sessionID, userID) } catch { throw APIError.unavailable() }
            guard live else {
                revocations.revoke(sessionID: sessionID)
                throw APIError.invalidToken()
            }
        }
        return .user(id: userID, sessionID: sessionID)
    }
}
