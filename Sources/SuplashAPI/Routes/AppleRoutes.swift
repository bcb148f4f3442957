import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `POST /v1/auth/apple` — spec §3 Sign in with Apple; `POST /v1/apple/notifications` — §9
/// Apple account events.
enum AppleRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", "/v1/auth/apple", Route { try signIn($0, services) })
        router.add("POST", "/v1/apple/notifications", Route { try notification($0, services) })
    }

    /// `{identityToken, authorizationCode?, nonce?, displayName?}` → 201 `{user, session}` for a
    /// new user, 200 for an existing or newly linked one. With `authorizationCode` the code is
    /// exchanged at Apple first and Apple's refresh token kept sealed; 400
    /// `invalid_authorization_code` when Apple refuses it (nothing is stored).
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
        var appleToken: AppleRefreshToken?
        // Without `apple.teamID`/`keyID`/`privateKeyFile` the code is not exchanged (a start-up
        // warning says so).
        if let code = input.authorizationCode, let exchange = services.appleCodeExchange {
            appleToken = try exchange.refreshToken(code: code, clientID: identity.audience, sub: identity.sub)
        }
        let (session, refreshToken) = AuthRoutes.newSession(userID: profile.id, now: now, services: services)
        let result = try identities.signInWithApple(
            sub: identity.sub, email: email, emailVerified: emailVerified,
            newProfile: profile, session: session, appleToken: appleToken, now: now)
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

extension AppleRoutes {
    /// `{payload}` (Apple's signed account event) → 200 once verified — also for a duplicate
    /// `jti` or an unknown account; 400 / 401 for a malformed or forged one (nothing changes).
    static func notification(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        guard let notifications = services.appleNotifications else {
            throw APIError.unavailable("Apple account events are not configured.")
        }
        let body = try request.jsonBody()
        guard case .object = body, case .string(let payload)? = body["payload"], payload.utf8.count <= 16_384
        else { throw AppleNotifications.malformed("the body must be {\"payload\": \"<JWS>\"}") }
        let now = request.now
        let (jti, event) = try notifications.verify(payload: payload, now: now / 1000)
        switch try notifications.apply(jti: jti, event: event, now: now) {
        case .duplicate, .unknownAccount:
            break
        case .mailHold(let held):
            if !held { services.mail?.wake() }
        case .sessionsRevoked(let userID, let sessionIDs):
            for id in sessionIDs { services.revocations.revoke(sessionID: id) }
            services.revocations.revokeUser(userID, issuedBefore: now / 1000)
        case .accountErased(let userID):
            services.revocations.revoke(userID: userID)
        }
        return .empty(200)
    }
}
