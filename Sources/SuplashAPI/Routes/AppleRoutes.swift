import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `POST /v1/auth/apple` — spec §3 Sign in with Apple.
enum AppleRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", "/v1/auth/apple", Route { try signIn($0, services) })
    }

    /// `{identityToken, nonce?, displayName?}` → 201 `{user, session}` for a new user, 200 for
    /// an existing or newly linked one.
    static func signIn(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let input = try EmailCodeInput.apple(try request.jsonBody())
        guard let apple = services.apple, let identities = services.appleIdentities else {
            throw APIError.unavailable("Sign in with Apple is not configured.")
        }
        let now = request.now
        let identity = try apple.verify(token: input.identityToken, nonce: input.nonce, now: now / 1000)
        // Without a usable email claim the account gets a reserved placeholder (RFC 2606 `.invalid`).
        let claimed = identity.email.flatMap(Credentials.normalizedEmail)
        let email = claimed ?? "apple-\(SHA256.hex(Array(identity.sub.utf8)).prefix(20))@privaterelay.invalid"
        let emailVerified = claimed != nil && identity.emailVerified
        let profile = UserProfile(id: services.newID(now: now), email: email, displayName: input.displayName, now: now)
        let (session, refreshToken) = AuthRoutes.newSession(userID: profile.id, now: now, services: services)
        let result = try identities.signInWithApple(
            sub: identity.sub, email: email, emailVerified: emailVerified,
            newProfile: profile, session: session, now: now)
        if !result.revokedSessionIDs.isEmpty {
            for id in result.revokedSessionIDs { services.revocations.revoke(sessionID: id) }
            services.revocations.revokeUser(result.user.id, issuedBefore: now / 1000)
        }
        return .json(
            result.created ? 201 : 200,
            .object([
                ("user", Presenter.profile(result.user)),
                (
                    "session",
                    services.tokens.sessionJSON(
                        userID: result.user.id, sessionID: session.id,
                        refreshToken: refreshToken, now: now)
                ),
            ]))
    }
}
