import SuplashDomain
import SuplashHTTP

/// `/v1/auth/email/*` and `/v1/auth/password/*` — spec §3 email codes.
enum EmailCodeRoutes {
    static func register(into router: inout Router<Route>, services: Services) {
        router.add("POST", "/v1/auth/email/verify", Route { try verify($0, services) })
        router.add("POST", "/v1/auth/email/resend", Route { try resend($0, services) })
        router.add("POST", "/v1/auth/password/forgot", Route { try forgot($0, services) })
        router.add("POST", "/v1/auth/password/reset", Route { try reset($0, services) })
    }

    static func codes(_ services: Services) throws -> EmailCodes {
        guard let mail = services.mail else { throw APIError.unavailable("Email is not configured.") }
        return mail
    }

    /// The caller's user id; an admin key has no mailbox.
    static func userID(_ request: APIRequest, _ services: Services) throws -> String {
        guard case .user(let id, _) = try services.authenticator.authenticate(request) else {
            throw APIError.badRequest(.userTokenRequired, "This route needs a user's access token, not an admin key.")
        }
        return id
    }

    static let invalidCode = APIError(.invalidCode, detail: "The code is wrong, expired or used up; request a new one.")

    /// `POST /v1/auth/email/verify {code}` (Bearer) → 204.
    static func verify(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let id = try userID(request, services)
        let code = try EmailCodeInput.verify(try request.jsonBody())
        guard let user = try services.users.user(id: id) else { throw APIError.invalidToken() }
        if user.profile.emailVerified { return .empty(204) }
        switch try codes(services).redeem(
            userID: id, purpose: .verifyEmail, code: code, now: request.now,
            redemption: .verifyEmail)
        {
        case .redeemed:
            return .empty(204)
        case .wrong(let left):
            throw APIError(
                .invalidCode,
                detail: left > 0
                    ? "The code is wrong; \(left) attempts left."
                    : "The code is wrong and now void; request a new one.")
        case .expired:
            throw APIError(.codeExpired, detail: "The code has expired; request a new one.")
        case .attemptsExhausted:
            throw APIError(.codeAttemptsExhausted, detail: "Too many wrong codes; request a new one.")
        case .noCode:
            throw APIError(.invalidCode, detail: "No code is pending; request a new one.")
        }
    }

    /// `POST /v1/auth/email/resend` (Bearer) → 202; 429 `code_resend_too_soon` within 60 s of
    /// the last code; 409 `email_already_verified`.
    static func resend(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let id = try userID(request, services)
        guard let user = try services.users.user(id: id) else { throw APIError.invalidToken() }
        if user.profile.emailVerified {
            throw APIError.conflict(.emailAlreadyVerified, "The email address is already verified.")
        }
        switch try codes(services).issue(for: user.profile, purpose: .verifyEmail, now: request.now) {
        case .issued, .noSuchUser:
            return .empty(202)
        case .tooSoon(let ms):
            throw tooSoon(ms)
        }
    }

    static func tooSoon(_ ms: Int64) -> APIError {
        let seconds = max(1, (ms + 999) / 1000)
        return APIError(
            .codeResendTooSoon, detail: "A code was sent less than a minute ago; retry after the time in Retry-After.",
            headers: [("Retry-After", String(seconds))])
    }

    /// `POST /v1/auth/password/forgot {email}` → 202 always: the work (lookup, code, outbox)
    /// runs after the response on a background queue, so no answer or timing depends on
    /// whether the account exists.
    static func forgot(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let email = try EmailCodeInput.forgot(try request.jsonBody())
        let mail = try codes(services)
        if let email { mail.requestPasswordReset(email: email, now: request.now) }
        return .empty(202)
    }

    /// `POST /v1/auth/password/reset {email, code, newPassword}` → 204: new Argon2id hash,
    /// every session of the user revoked at once. Every failure is the same 422 `invalid_code`.
    static func reset(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let input = try EmailCodeInput.reset(try request.jsonBody())
        let mail = try codes(services)
        // Hash first, on every path, so an unknown email costs the same Argon2id work.
        let phc = try services.passwordHashing.hash(input.newPassword)
        guard let email = input.email, let user = try services.users.user(email: email) else { throw invalidCode }
        let userID = user.profile.id
        let outcome = try mail.redeem(
            userID: userID, purpose: .resetPassword, code: input.code, now: request.now,
            redemption: .resetPassword(newPasswordHash: phc))
        guard case .redeemed(let revoked) = outcome else { throw invalidCode }
        for sessionID in revoked { services.revocations.revoke(sessionID: sessionID) }
        services.revocations.revokeUser(userID, issuedBefore: request.now / 1000)
        return .empty(204)
    }
}
