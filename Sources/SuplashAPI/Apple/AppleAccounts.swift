import SuplashCrypto
import SuplashDomain
import SuplashJSON
import SuplashLogging

/// Apple's token endpoint as the sign-in route needs it (docs/apple.md, "Code exchange"):
/// implemented by the executable over `SuplashAppleID` and the libcurl client, so this target
/// stays free of outbound HTTP.
public protocol AppleCodeExchanging: Sendable {
    /// Exchanges the single-use `code` for `clientID` (the identity token's audience) at
    /// `apple.tokenURL`, blocking the calling handler thread until Apple answers or the
    /// request times out.
    func exchange(code: String, clientID: String) -> AppleCodeExchangeResult
}

/// What Apple answered to a code exchange.
public enum AppleCodeExchangeResult: Sendable, Equatable {
    /// 200 with a refresh token (plaintext: seal it before it goes anywhere) and the `sub` of
    /// the identity token in the same answer (the Apple user the code was issued to; nil when
    /// the answer named none).
    case refreshToken(String, subject: String?)
    /// 400 `invalid_grant`: the code is invalid, expired or used.
    case invalidGrant
    /// Anything else (configuration, Apple down, a 200 without a refresh token): the sign-in
    /// goes on without a token; `code` names the reason for the log (an Apple error code).
    case failed(code: String)
}

/// The code exchange of `POST /v1/auth/apple` (spec §3): exchanges the code, and seals
/// Apple's refresh token for the identity row (`apple_identities`, `refresh_token`, `sub`).
public struct AppleCodeExchange: Sendable {
    let endpoint: any AppleCodeExchanging
    let keyring: SealingKeyring
    let logger: Logger
    /// The log reason when Apple's answer is for another Apple user than the identity token's.
    static let subjectMismatch = "subject_mismatch"

    /// - Parameters:
    ///   - endpoint: Apple's token endpoint.
    ///   - keyring: seals the refresh token (`security.sealingKeyFile`).
    public init(endpoint: any AppleCodeExchanging, keyring: SealingKeyring, logger: Logger) {
        self.endpoint = endpoint
        self.keyring = keyring
        self.logger = logger
    }

    /// The sealed refresh token for `sub`, or nil when Apple gave none or gave one of another
    /// Apple user (its identity token's `sub` is not `sub`: warning `apple_code_exchange_failed`
    /// with `subject_mismatch`; not kept: deleting this account would revoke that user's token).
    /// - Throws: 400 `invalid_authorization_code` when Apple refused the code (`invalid_grant`).
    func refreshToken(code: String, clientID: String, sub: String) throws(APIError) -> AppleRefreshToken? {
        switch endpoint.exchange(code: code, clientID: clientID) {
        case .refreshToken(let token, let subject):
            guard subject == sub else {
                logger.warning("apple_code_exchange_failed", .code("appleError", Self.subjectMismatch))
                return nil
            }
            do {
                let sealed = try keyring.seal(
                    token, context: SealingContext(table: "apple_identities", column: "refresh_token", rowID: sub))
                return AppleRefreshToken(clientID: clientID, sealed: sealed)
            } catch {
                logger.warning("apple_token_not_sealed", .errorType(String(reflecting: type(of: error))))
                return nil
            }
        case .invalidGrant:
            throw APIError(
                .invalidAuthorizationCode,
                detail: "Apple refused the authorization code: it is invalid, expired or already used.")
        case .failed(let code):
            logger.warning("apple_code_exchange_failed", .code("appleError", code))
            return nil
        }
    }
}

/// `POST /v1/apple/notifications` (spec §9): verifies Apple's signed account event and
/// applies it once.
public struct AppleNotifications: Sendable {
    let keySet: AppleKeySet
    let audiences: Set<String>
    let repository: any AppleAccountEventRepository
    /// How old an event's `iat` may be, seconds (Apple retries for a while; default 7 days).
    let maximumAgeSeconds: Int64
    let leewaySeconds: Int64

    /// - Parameters:
    ///   - keySet: Apple's key set (the one identity tokens use).
    ///   - audiences: accepted `aud` values (`apple.audiences`).
    public init(
        keySet: AppleKeySet, audiences: Set<String>, repository: any AppleAccountEventRepository,
        maximumAgeSeconds: Int64 = 7 * 86_400, leewaySeconds: Int64 = 60
    ) {
        self.keySet = keySet
        self.audiences = audiences
        self.repository = repository
        self.maximumAgeSeconds = maximumAgeSeconds
        self.leewaySeconds = leewaySeconds
    }

    static func malformed(_ reason: String) -> APIError {
        APIError(.invalidAppleNotification, detail: "The notification is malformed: \(reason).")
    }

    static func unverified(_ reason: String) -> APIError {
        APIError(.unverifiedAppleNotification, detail: "The notification is not Apple's: \(reason).")
    }

    /// Verifies `payload` (a compact JWS): RS256 against Apple's keys, `iss`, `aud` ∈
    /// `audiences`, `iat` (not in the future, not older than `maximumAgeSeconds`), a `jti`, and
    /// `events` — a JSON string holding `{type, sub, email?}`.
    /// - Parameter now: Unix seconds.
    /// - Returns: the `jti` and the event.
    /// - Throws: 400 `invalid_apple_notification` (malformed), 401 `unverified_apple_notification`
    ///   (signature, issuer, audience, time), 503 when Apple's keys cannot be loaded.
    public func verify(payload: String, now: Int64) throws(APIError) -> (jti: String, event: AppleAccountEvent) {
        let parts = payload.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { throw Self.malformed("not a JWS") }
        guard !audiences.isEmpty else { throw Self.unverified("audience") }
        let keys: [String: RSAPublicKey]
        do {
            keys = try keySet.keys(for: JWT.unverifiedKeyID(payload))
        } catch {
            throw APIError.unavailable("Apple's signing keys cannot be loaded; retry later.")
        }
        let claims: JSONValue
        do {
            claims = try JWT.verifyRS256(payload, keys: keys, now: now, leewaySeconds: leewaySeconds, requireExpiry: false)
        } catch {
            switch error {
            case .malformed: throw Self.malformed("claims")
            case .unsupportedAlgorithm: throw Self.unverified("algorithm")
            case .unknownKey: throw Self.unverified("unknown key")
            case .badSignature: throw Self.unverified("signature")
            case .expired: throw Self.unverified("expired")
            case .notYetValid: throw Self.unverified("issued in the future")
            }
        }
        guard claims["iss"]?.stringValue == AppleSignIn.issuer else { throw Self.unverified("issuer") }
        let audienceOK: Bool
        switch claims["aud"] {
        case .string(let aud)?: audienceOK = audiences.contains(aud)
        case .array(let list)?: audienceOK = list.contains { $0.stringValue.map(audiences.contains) ?? false }
        default: audienceOK = false
        }
        guard audienceOK else { throw Self.unverified("audience") }
        guard case .number(let iatNumber)? = claims["iat"], let iat = iatNumber.int64Value else { throw Self.malformed("iat") }
        guard now - iat <= maximumAgeSeconds else { throw Self.unverified("too old") }
        guard let jti = claims["jti"]?.stringValue, (1...200).contains(jti.utf8.count) else { throw Self.malformed("jti") }
        // `events` is a JSON string holding an object (Apple's documented shape).
        guard let eventsText = claims["events"]?.stringValue,
            let events = try? JSONParser.parse(Array(eventsText.utf8), maxDepth: 8), case .object = events
        else { throw Self.malformed("events") }
        guard let type = events["type"]?.stringValue, let sub = events["sub"]?.stringValue, !sub.isEmpty,
            sub.utf8.count <= 255
        else { throw Self.malformed("events") }
        let email = events["email"]?.stringValue.flatMap(Credentials.normalizedEmail)
        switch type {
        case "email-disabled", "email-enabled":
            guard let email else { throw Self.malformed("email") }
            // Which of the two came last is decided by `event_time` (ms), not by arrival: Apple
            // retries a failed delivery later. Without one, the notification's `iat`.
            let eventTime: Int64
            switch events["event_time"] {
            case nil, .null?: eventTime = iat * 1000
            case .number(let n)?:
                guard let t = n.int64Value else { throw Self.malformed("event_time") }
                eventTime = t
            default: throw Self.malformed("event_time")
            }
            return (
                jti,
                type == "email-disabled"
                    ? .emailDisabled(sub: sub, email: email, eventTime: eventTime)
                    : .emailEnabled(sub: sub, email: email, eventTime: eventTime)
            )
        case "consent-revoked":
            return (jti, .consentRevoked(sub: sub))
        case "account-delete":
            return (jti, .accountDelete(sub: sub))
        default:
            throw Self.malformed("event type")
        }
    }

    /// Applies a verified event once (by `jti`).
    /// - Throws: the store's error.
    func apply(jti: String, event: AppleAccountEvent, now: Int64) throws -> AppleEventOutcome {
        try repository.applyAppleEvent(jti: jti, event: event, now: now)
    }
}
