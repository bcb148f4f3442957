import SuplashHTTPClient
import SuplashJSON

/// The `reason` codes APNs answers with (Apple, "Handling notification responses from
/// APNs"), plus `other` for anything unknown. Logs carry these, never Apple's raw text.
public enum APNsReason: String, Sendable, Hashable, CaseIterable {
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case expiredToken = "ExpiredToken"
    case unregistered = "Unregistered"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"
    /// Not one of Apple's documented codes (or no body).
    case other = "Other"
    /// Not an answer from Apple: the connection broke, timed out or could not be made.
    case connectionFailed = "ConnectionFailed"

    /// The reason named in a response body `{"reason": "...", "timestamp": ...}`.
    public init(body: [UInt8]) {
        guard let value = try? JSONParser.parse(body, maxDepth: 4), let text = value["reason"]?.stringValue else {
            self = .other
            return
        }
        self = APNsReason(rawValue: text) ?? .other
    }
}

/// What to do after one attempt — a pure function of the answer (`APNsResponseClassifier`).
public enum APNsDecision: Sendable, Hashable {
    /// 200: delivered to APNs.
    case sent
    /// `BadDeviceToken` on the first try: send once more to the other environment.
    case retryInOtherEnvironment
    /// The token is dead (`BadDeviceToken` in both environments, or `Unregistered` newer than
    /// the registration): drop it from the registry.
    case dropToken(APNsReason)
    /// `ExpiredProviderToken`: refresh the provider token (20-minute rule permitting), retry.
    case refreshProviderTokenAndRetry
    /// Our configuration is wrong (key, team, topic, environment): pause the sender and alarm;
    /// keep every registration.
    case configurationError(APNsReason)
    /// 429, 5xx or a broken connection: try again after a backoff.
    case retryLater(APNsReason)
    /// Apple refused this one push for a reason retrying will not fix (bad header, payload too
    /// large …): give the push up, keep the token.
    case rejected(APNsReason)
}

/// Classifies APNs answers (Apple, "Handling notification responses from APNs").
public enum APNsResponseClassifier {
    /// The decision for an answer.
    /// - Parameters:
    ///   - status: the HTTP status.
    ///   - reason: the body's `reason`.
    ///   - unregisteredAt: the body's `timestamp` of a 410 (Unix milliseconds), if any.
    ///   - registeredAt: when the token was registered (Unix milliseconds), if known.
    ///   - triedOtherEnvironment: this attempt already was the other-environment retry.
    public static func decide(
        status: Int, reason: APNsReason, unregisteredAt: Int64?, registeredAt: Int64?,
        triedOtherEnvironment: Bool
    ) -> APNsDecision {
        switch status {
        case 200:
            return .sent
        case 410:
            // Apple's timestamp is when it learned the token was invalid; a registration after
            // that means the app got the token back (reinstall), so keep it.
            if let unregisteredAt, let registeredAt, unregisteredAt <= registeredAt { return .rejected(.unregistered) }
            return .dropToken(reason == .expiredToken ? .expiredToken : .unregistered)
        case 429:
            return .retryLater(reason == .tooManyProviderTokenUpdates ? .tooManyProviderTokenUpdates : .tooManyRequests)
        case 500...599:
            return .retryLater(reason == .other ? (status == 503 ? .serviceUnavailable : .internalServerError) : reason)
        default:
            break
        }
        switch reason {
        case .badDeviceToken, .missingDeviceToken:
            return triedOtherEnvironment ? .dropToken(reason) : .retryInOtherEnvironment
        case .expiredProviderToken:
            return .refreshProviderTokenAndRetry
        case .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badCertificate,
            .badCertificateEnvironment, .forbidden, .badTopic, .topicDisallowed, .deviceTokenNotForTopic,
            .missingTopic, .invalidPushType:
            return .configurationError(reason)
        case .idleTimeout:
            return .retryLater(reason)
        default:
            return .rejected(reason)
        }
    }

    /// The decision for a transport failure: connection-level problems are retried after a
    /// backoff (libcurl reconnects); a refused request or a shut-down client is not.
    public static func decide(error: HTTPClientError) -> APNsDecision {
        switch error {
        case .couldNotResolve, .couldNotConnect, .tls, .timedOut, .connectionLost, .cancelled, .shutDown, .curl:
            return .retryLater(.connectionFailed)
        case .http2NotNegotiated:
            return .configurationError(.connectionFailed)
        case .invalidRequest, .responseTooLarge:
            return .rejected(.other)
        }
    }
}

/// Exponential backoff with jitter: attempt n (1-based) waits a random time in
/// [d/2, d] where d = min(cap, base × 2^(n−1)) ("equal jitter").
public struct APNsBackoff: Sendable, Hashable {
    /// Delay before the second attempt (before jitter).
    public var base: Duration
    /// Largest delay.
    public var cap: Duration

    /// Creates a policy (defaults: 1 s doubling up to 5 minutes).
    public init(base: Duration = .seconds(1), cap: Duration = .seconds(300)) {
        self.base = base
        self.cap = cap
    }

    /// The delay after failed attempt `attempt` (≥ 1), with `unitRandom` in [0, 1) choosing
    /// the jitter.
    public func delay(afterAttempt attempt: Int, unitRandom: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        var full = base * (1 << exponent)
        if full > cap || full < .zero { full = cap }
        let fraction = 0.5 + 0.5 * min(max(unitRandom, 0), 1)
        return full * fraction
    }
}
