import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `/v1/auth/*` — spec §3.
enum AuthRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", "/v1/auth/signup", Route { try signUp($0, services) })
        router.add("POST", "/v1/auth/login", Route { try logIn($0, services) })
        router.add("POST", "/v1/auth/refresh", Route { try refresh($0, services) })
        router.add("POST", "/v1/auth/logout", Route { try logOut($0, services) })
        EmailCodeRoutes.register(into: &router, services: services)
        AppleRoutes.register(into: &router, services: services)
    }

    /// A new session row plus its first refresh token.
    static func newSession(userID: String, now: Int64, services: Services) -> (NewSession, String) {
        let (token, hash) = services.tokens.newRefreshToken()
        let session = NewSession(
            id: Base64URL.encode(SecureRandom.bytes(16)), userID: userID, refreshTokenHash: hash,
            createdAt: now, refreshExpiresAt: now + services.tokens.refreshTokenTTL * 1000)
        return (session, token)
    }

    static func signUp(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let input = try Credentials.signUp(try request.jsonBody())
        if try services.users.user(email: input.email) != nil { throw RepositoryError.emailTaken }
        let phc = try services.passwordHashing.hash(input.password)
        let now = request.now
        let profile = UserProfile(id: services.newID(now: now), email: input.email, displayName: input.displayName, now: now)
        let (session, refreshToken) = newSession(userID: profile.id, now: now, services: services)
        let stored = try services.users.createUser(profile, passwordHash: phc, session: session)
        services.mail?.sendVerificationAfterSignUp(stored, now: now)
        return .json(
            201,
            .object([
                ("user", Presenter.profile(stored)),
                (
                    "session",
                    services.tokens.sessionJSON(
                        userID: stored.id, sessionID: session.id,
                        refreshToken: refreshToken, now: now)
                ),
            ]))
    }

    static func logIn(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let input = try Credentials.login(try request.jsonBody())
        // Failed logins are limited per account (credential stuffing). The key is the
        // normalised email whether or not an account exists. Past the budget every attempt
        // fails exactly like a wrong password (same status, body and Argon2id work), so the
        // limit neither reveals accounts nor lets a botnet keep testing passwords.
        let invalid = APIError(.invalidCredentials, detail: "The email or password is wrong.")
        let accountKey = input.email ?? "invalid"
        let failureBudget = services.rateLimits.loginFailuresPerAccount
        let withinBudget = failureBudget.map { $0.take(accountKey, now: RateLimits.now()).allowed } ?? true
        let user = withinBudget ? try input.email.flatMap { try services.users.user(email: $0) } : nil
        // Unknown email and wrong password take the same path: one Argon2id verification.
        guard services.passwordHashing.verify(input.password, phc: user?.passwordHash), let user else {
            throw invalid
        }
        failureBudget?.refund(accountKey)
        // A hash made under other Argon2id parameters (the operator changed `auth.argon2*`)
        // is replaced while the password is at hand. Best effort: if hashing or the write
        // fails, the old hash still verifies and the next login tries again.
        if let current = user.passwordHash, PasswordHasher.needsRehash(phc: current, parameters: services.passwordHashing.parameters),
            let renewed = try? services.passwordHashing.hash(input.password)
        {
            _ = try? services.users.replacePasswordHash(userID: user.profile.id, currentHash: current, newHash: renewed)
        }
        let now = request.now
        let (session, refreshToken) = newSession(userID: user.profile.id, now: now, services: services)
        try services.sessions.createSession(session)
        return .json(
            200,
            .object([
                ("user", Presenter.profile(user.profile)),
                (
                    "session",
                    services.tokens.sessionJSON(
                        userID: user.profile.id, sessionID: session.id,
                        refreshToken: refreshToken, now: now)
                ),
            ]))
    }

    static func refreshTokenField(_ body: JSONValue, required: Bool) throws -> String? {
        guard case .object(let members) = body else {
            throw ValidationFailure([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["refreshToken"], readOnly: [])
        let token = r.string("refreshToken", minLength: 1, maxLength: 512, required: required).value
        if !r.errors.isEmpty { throw ValidationFailure(r.errors) }
        return token
    }

    static func refresh(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        guard let token = try refreshTokenField(try request.jsonBody(), required: true) else {
            throw APIError.internalError
        }
        let now = request.now
        let (newToken, newHash) = services.tokens.newRefreshToken()
        let outcome = try services.sessions.rotateRefreshToken(
            hash: services.tokens.hashRefreshToken(token), newHash: newHash, now: now,
            newExpiresAt: now + services.tokens.refreshTokenTTL * 1000)
        switch outcome {
        case .rotated(let sessionID, let userID):
            return .json(
                200,
                .object([
                    ("session", services.tokens.sessionJSON(userID: userID, sessionID: sessionID, refreshToken: newToken, now: now))
                ]))
        case .reused(let sessionID, _):
            services.revocations.revoke(sessionID: sessionID)
            throw APIError.unauthorized(
                .refreshTokenReused,
                "This refresh token was already used; the session has been revoked.")
        case .revoked, .expired, .unknown:
            throw APIError.unauthorized(.invalidRefreshToken, "The refresh token is invalid, expired or revoked.")
        }
    }

    static func logOut(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let hasBody = !request.http.body.isEmpty
        let token = hasBody ? try refreshTokenField(try request.jsonBody(), required: false) : nil
        if let token {
            if let sessionID = try services.sessions.revokeSession(
                refreshTokenHash: services.tokens.hashRefreshToken(token),
                now: request.now)
            {
                services.revocations.revoke(sessionID: sessionID)
            }
            return .empty(204)
        }
        guard case .user(let userID, let sessionID) = try services.authenticator.authenticate(request) else {
            throw APIError.badRequest(.refreshTokenRequired, "An admin key has no session; send a refreshToken.")
        }
        try services.sessions.revokeSession(id: sessionID, userID: userID, now: request.now)
        services.revocations.revoke(sessionID: sessionID)
        return .empty(204)
    }
}
