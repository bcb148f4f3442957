import SuplashDomain

/// Turns `Authorization: Bearer …` into a `Principal` (spec §3, RFC 6750).
public struct Authenticator: Sendable {
    let tokens: TokenService
    let revocations: RevocationView
    let adminKeys: AdminKeyCache

    public init(tokens: TokenService, revocations: RevocationView, adminKeys: AdminKeyCache) {
        self.tokens = tokens
        self.revocations = revocations
        self.adminKeys = adminKeys
    }

    /// The caller of `request`.
    /// - Throws: 401 `unauthenticated` without a bearer token, 401 `invalid_token` for a
    ///   bad, expired, tampered or revoked one; 503 when admin keys cannot be read.
    public func authenticate(_ request: APIRequest) throws(APIError) -> Principal {
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
        let (userID, sessionID) = try tokens.verifyAccessToken(token, now: request.now)
        guard !revocations.isRevoked(sessionID: sessionID) else { throw APIError.invalidToken() }
        guard !revocations.isRevoked(userID: userID) else { throw APIError.invalidToken() }
        return .user(id: userID, sessionID: sessionID)
    }
}
