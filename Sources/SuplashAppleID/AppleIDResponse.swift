import SuplashHTTPClient
import SuplashJSON

/// The OAuth 2.0 `error` codes Apple's token and revoke endpoints answer with (RFC 6749
/// §5.2; Apple's `ErrorResponse`), plus `other` for anything else. Logs carry these, never
/// Apple's body.
public enum AppleIDErrorCode: String, Sendable, Hashable, CaseIterable {
    case invalidRequest = "invalid_request"
    case invalidClient = "invalid_client"
    case invalidGrant = "invalid_grant"
    case unauthorizedClient = "unauthorized_client"
    case unsupportedGrantType = "unsupported_grant_type"
    case invalidScope = "invalid_scope"
    /// No `error` member, or a code not listed here.
    case other = "other"
    /// Not an answer from Apple: the connection broke, timed out or could not be made.
    case connectionFailed = "connection_failed"

    /// The code named in a body `{"error": "..."}`.
    public init(body: [UInt8]) {
        guard let value = try? JSONParser.parse(body, maxDepth: 4), let text = value["error"]?.stringValue,
            let code = AppleIDErrorCode(rawValue: text), code != .connectionFailed
        else {
            self = .other
            return
        }
        self = code
    }
}

/// What to do after one call to the token or revoke endpoint — a pure function of the answer.
public enum AppleIDDecision: Sendable, Hashable {
    /// 200: the code was exchanged / the token revoked.
    case succeeded
    /// 400 `invalid_grant`: the code is invalid, expired or used (exchange: refuse the sign-in's
    /// code, keep no token), or the refresh token is already revoked (revoke job: done).
    case invalidGrant
    /// Our configuration is wrong (`invalid_client`: key, key id, team id, client id;
    /// `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`; the endpoint refused
    /// HTTP/2 or the request): pause the jobs and alarm, do not retry forever.
    case configurationError(AppleIDErrorCode)
    /// 429, 5xx or a broken connection: try again after a backoff (`retryAfterSeconds` from
    /// the `Retry-After` header when Apple sent a number of seconds).
    case retryLater(AppleIDErrorCode, retryAfterSeconds: Int64?)
    /// Another refusal retrying will not fix (`invalid_request`, other 4xx): give this one up.
    case rejected(AppleIDErrorCode)
}

/// Classifies answers of Apple's token and revoke endpoints.
public enum AppleIDResponseClassifier {
    /// The decision for a response.
    public static func decide(_ response: HTTPClientResponse) -> AppleIDDecision {
        decide(status: response.status, body: response.body, retryAfter: response.header("retry-after"))
    }

    /// The decision for `status`, the response `body` and its `Retry-After` value.
    public static func decide(status: Int, body: [UInt8], retryAfter: String? = nil) -> AppleIDDecision {
        switch status {
        case 200:
            return .succeeded
        case 429, 500...599:
            return .retryLater(AppleIDErrorCode(body: body), retryAfterSeconds: retryAfter.flatMap(delaySeconds))
        default:
            break
        }
        let code = AppleIDErrorCode(body: body)
        switch code {
        case .invalidGrant:
            return .invalidGrant
        case .invalidClient, .unauthorizedClient, .unsupportedGrantType, .invalidScope:
            return .configurationError(code)
        case .invalidRequest, .other, .connectionFailed:
            // Apple answers 401 for a secret it cannot verify even without a body.
            return status == 401 ? .configurationError(code == .other ? .invalidClient : code) : .rejected(code)
        }
    }

    /// The decision for a transport failure: connection-level problems are retried after a
    /// backoff; a refused request or a server without HTTP/2 is our configuration.
    public static func decide(error: HTTPClientError) -> AppleIDDecision {
        switch error {
        case .couldNotResolve, .couldNotConnect, .tls, .timedOut, .connectionLost, .cancelled, .shutDown, .curl:
            return .retryLater(.connectionFailed, retryAfterSeconds: nil)
        case .http2NotNegotiated, .invalidRequest:
            return .configurationError(.connectionFailed)
        case .responseTooLarge:
            return .rejected(.other)
        }
    }

    /// `Retry-After` as delay-seconds (RFC 9110 §10.2.3): 1–9 digits; an HTTP date is ignored.
    private static func delaySeconds(_ text: String) -> Int64? {
        let trimmed = text.utf8.filter { $0 != 0x20 && $0 != 0x09 }
        guard !trimmed.isEmpty, trimmed.count <= 9, trimmed.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(String(decoding: trimmed, as: UTF8.self))
    }
}

/// Retry schedule for revoke jobs: attempt n (1-based) is followed by a wait of
/// min(cap, base × 2^(n−1)) scaled into [½, 1] by a random fraction ("equal jitter"), or
/// Apple's `Retry-After` when longer; after `maxAttempts` the job gives up (and the operator
/// sees a warning and a metric).
public struct AppleIDRetryPolicy: Sendable, Hashable {
    /// Wait after the first failed attempt, seconds (before jitter).
    public var baseSeconds: Int64
    /// Longest wait, seconds.
    public var capSeconds: Int64
    /// Attempts in all, including the first.
    public var maxAttempts: Int

    /// Creates a policy (defaults: 60 s doubling up to 6 hours, 12 attempts — about two days).
    public init(baseSeconds: Int64 = 60, capSeconds: Int64 = 21_600, maxAttempts: Int = 12) {
        self.baseSeconds = max(1, baseSeconds)
        self.capSeconds = max(self.baseSeconds, capSeconds)
        self.maxAttempts = max(1, maxAttempts)
    }

    /// Seconds to wait after failed attempt `attempt` (≥ 1), or nil when no attempt is left.
    /// - Parameters:
    ///   - retryAfterSeconds: Apple's `Retry-After`, honoured up to `capSeconds`.
    ///   - unitRandom: in [0, 1), chooses the jitter (injected so the schedule is testable).
    public func delaySeconds(afterAttempt attempt: Int, retryAfterSeconds: Int64? = nil, unitRandom: Double) -> Int64? {
        guard attempt < maxAttempts else { return nil }
        let exponent = Int64(min(max(attempt - 1, 0), 40))
        let (scaled, overflow) = baseSeconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        let full = overflow ? capSeconds : min(capSeconds, scaled)
        let fraction = 0.5 + 0.5 * min(max(unitRandom, 0), 1)
        let jittered = max(1, Int64((Double(full) * fraction).rounded(.up)))
        return max(jittered, min(retryAfterSeconds ?? 0, capSeconds))
    }
}

/// What a revoke job does after one attempt (docs/apple.md, "Revocation") — a pure function of
/// the decision, the attempt number and the retry policy.
public enum AppleRevokeStep: Sendable, Hashable {
    /// 200 or `invalid_grant` (already revoked): the job is done.
    case done
    /// 429, 5xx, connection failures: try again after `delaySeconds`.
    case retry(delaySeconds: Int64, code: AppleIDErrorCode)
    /// Attempts used up, or a refusal retrying cannot fix: give the job up (warning, metric).
    case giveUp(code: AppleIDErrorCode)
    /// Our configuration is wrong (`invalid_client` …): pause every job and alarm; this job
    /// keeps its attempt count and is tried again after the pause.
    case pause(code: AppleIDErrorCode)

    /// The step after attempt `attempt` (1-based) ended with `decision`.
    /// - Parameter unitRandom: in [0, 1), the jitter of `AppleIDRetryPolicy`.
    public static func after(
        _ decision: AppleIDDecision, attempt: Int, policy: AppleIDRetryPolicy, unitRandom: Double
    ) -> AppleRevokeStep {
        switch decision {
        case .succeeded, .invalidGrant:
            return .done
        case .configurationError(let code):
            return .pause(code: code)
        case .rejected(let code):
            return .giveUp(code: code)
        case .retryLater(let code, let retryAfter):
            guard let delay = policy.delaySeconds(afterAttempt: attempt, retryAfterSeconds: retryAfter, unitRandom: unitRandom)
            else { return .giveUp(code: code) }
            return .retry(delaySeconds: delay, code: code)
        }
    }
}
