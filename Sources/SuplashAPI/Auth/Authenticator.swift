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
    public init(
        tokens: TokenService, revocations: RevocationView, adminKeys: AdminKeyCache,
        perUserLimit: RateLimitLayer? = nil,
        sessionCheck: (@Sendable (_ sessionID: String, _ userID: String) throws -> Bool)? = nil
    ) {
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
                throw APIError(
                    .rateLimited, detail: "Too many requests for this user; retry after the time in Retry-After.",
                    headers: [
                        ("Retry-After", String(decision.resetSeconds)),
                        ("RateLimit-Policy", layer.policyHeader), ("RateLimit", layer.header(decision)),
                    ])
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
        guard let token = Self.bearerToken(header) else { throw APIError.unauthorized() }
        if token.hasPrefix(AdminKeyFormat.prefix) {
            let name: String?
            do { name = try adminKeys.name(forKey: token) } catch { throw APIError.unavailable() }
            guard let name else { throw APIError.invalidToken() }
            return .admin(name: name)
        }
        let (userID, sessionID, issuedAt) = try tokens.verifyAccessTokenIssuedAt(token, now: request.now)
        guard !revocations.isRevoked(sessionID: sessionID), !revocations.isRevoked(userID: userID),
            !revocations.isRevoked(userID: userID, issuedAt: issuedAt)
        else { throw APIError.invalidToken() }
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

    /// The credentials of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1): the
    /// text after the first space with surrounding spaces and tabs trimmed; nil for another
    /// scheme or nothing after it. Scanned as UTF-8 bytes (a `Character` split of every
    /// request's header was 4% of a GET's instructions).
    static func bearerToken(_ header: String) -> String? {
        let utf8 = header.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme = utf8[..<space]
        guard scheme.count == 6,
            zip(scheme, "bearer".utf8).allSatisfy({ ($0 | 0x20) == $1 })
        else { return nil }
        var start = utf8.index(after: space)
        var end = utf8.endIndex
        while start < end, utf8[start] == UInt8(ascii: " ") || utf8[start] == UInt8(ascii: "\t") {
            start = utf8.index(after: start)
        }
        while start < end {
            let last = utf8[utf8.index(before: end)]
            guard last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") else { break }
            end = utf8.index(before: end)
        }
        guard start < end else { return nil }
        return String(Substring(utf8[start..<end]))
    }
}
