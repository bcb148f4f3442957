import Foundation
import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON

/// Apple's signing keys (a JWKS), cached by `kid`. Loaded on first use; reloaded when a token
/// names an unknown `kid`, at most once per `minimumRefreshInterval`. The source is an
/// http(s) URL (default `https://appleid.apple.com/auth/keys`, downloaded with the project's
/// libcurl client, at most 1 MiB), a `file://` URL, or a path.
public final class AppleKeySet: @unchecked Sendable {
    /// Why no key set is available.
    public enum Failure: Error, Sendable {
        /// The source could not be read or did not hold a JWKS.
        case unavailable
    }

    let source: String
    let minimumRefreshInterval: Double
    let fetchTimeoutSeconds: Double
    // Guarded by `lock`.
    private var keys: [String: RSAPublicKey] = [:]
    private var lastFetch: Double?
    // Guarded by `lock`: a key set was read at least once (it may hold no RSA key).
    private var loaded = false
    private let lock = NSLock()
    /// Serialises fetches so concurrent sign-ins share one download.
    private let fetchLock = NSLock()

    /// - Parameters:
    ///   - minimumRefreshInterval: seconds between two fetches (default 60).
    ///   - fetchTimeoutSeconds: per download (default 5).
    public init(source: String, minimumRefreshInterval: Double = 60, fetchTimeoutSeconds: Double = 5) {
        self.source = source
        self.minimumRefreshInterval = minimumRefreshInterval
        self.fetchTimeoutSeconds = fetchTimeoutSeconds
    }

    /// The cached keys, fetching first when the cache is empty or lacks `kid` and the last
    /// fetch is older than the refresh interval. A failed refresh keeps the old keys.
    /// - Throws: `Failure.unavailable` when no key set was ever loaded.
    public func keys(for kid: String?) throws(Failure) -> [String: RSAPublicKey] {
        let uptime = { ProcessInfo.processInfo.systemUptime }
        func needsFetch() -> Bool {
            lock.withLock {
                guard let last = lastFetch else { return true }
                if let kid, keys[kid] != nil { return false }
                return uptime() - last >= minimumRefreshInterval
            }
        }
        if needsFetch() {
            fetchLock.withLock {
                guard needsFetch() else { return }
                let fetched = fetch()
                lock.withLock {
                    lastFetch = uptime()
                    if let fetched {
                        keys = fetched
                        loaded = true
                    }
                }
            }
        }
        let (current, everLoaded) = lock.withLock { (keys, loaded) }
        // No key set ever read → 503; a key set without the token's key → the caller's 401.
        guard everLoaded else { throw .unavailable }
        return current
    }

    /// Downloads or reads the JWKS; nil on any failure.
    private func fetch() -> [String: RSAPublicKey]? {
        let lower = source.lowercased()
        let bytes: [UInt8]
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            let configuration = HTTPClientConfiguration(
                connectTimeout: .seconds(fetchTimeoutSeconds), requestTimeout: .seconds(fetchTimeoutSeconds),
                maxResponseBodyBytes: 1 << 20, requiresHTTP2: false, allowsCleartext: true)
            let request = HTTPClientRequest(
                method: "GET", url: source, headers: [HTTPClientHeader("Accept", "application/json")])
            guard case .success(200, let body) = HTTPCall.perform(request, configuration: configuration) else {
                return nil
            }
            bytes = body
        } else {
            let path = lower.hasPrefix("file://") ? (URL(string: source)?.path ?? "") : source
            guard !path.isEmpty, let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
                return nil
            }
            bytes = Array(data)
        }
        return JWKS.rsaKeys(from: bytes)
    }
}

/// A verified Apple identity.
public struct AppleIdentity: Sendable, Equatable {
    /// Apple's stable user id for this team (`sub`).
    public var sub: String
    /// The `email` claim (may be a private-relay address), or nil.
    public var email: String?
    /// The `email_verified` claim (`true` or `"true"`).
    public var emailVerified: Bool
    /// The accepted audience (the client id: bundle id or Services ID); "" when unknown.
    public var audience: String

    /// An identity as read from verified claims.
    public init(sub: String, email: String?, emailVerified: Bool, audience: String = "") {
        self.sub = sub
        self.email = email
        self.emailVerified = emailVerified
        self.audience = audience
    }
}

/// Verifies Sign in with Apple identity tokens (RS256 JWTs signed by Apple): signature
/// against `AppleKeySet`, `iss` = `https://appleid.apple.com`, `aud` ∈ `audiences`, `exp`,
/// `iat` (not in the future beyond the leeway), and `nonce`.
public struct AppleSignIn: Sendable {
    /// The issuer every token must carry.
    public static let issuer = "https://appleid.apple.com"
    /// Apple's key set (shared with the account events).
    public let keySet: AppleKeySet
    /// Accepted `aud` values: the app's bundle id and web service ids.
    public let audiences: Set<String>
    /// Clock skew allowed on `exp` and `iat`, seconds.
    public let leewaySeconds: Int64

    /// - Parameters:
    ///   - audiences: accepted `aud` values (empty: every token is refused).
    ///   - leewaySeconds: clock skew allowed on `exp`/`iat` (default 60).
    public init(keySet: AppleKeySet, audiences: Set<String>, leewaySeconds: Int64 = 60) {
        self.keySet = keySet
        self.audiences = audiences
        self.leewaySeconds = leewaySeconds
    }

    static func invalid(_ reason: String) -> APIError {
        APIError(.invalidIdentityToken, detail: "The Apple identity token is not acceptable: \(reason).")
    }

    /// Verifies `token`; `nonce` is the raw nonce the client generated (the token's `nonce`
    /// claim must be its SHA-256 in lower-case hex). When the token has a `nonce` claim, the
    /// client must send the nonce; when the client sends one, the token must carry it.
    /// - Parameter now: Unix seconds.
    /// - Throws: 401 `invalid_identity_token` (the detail names the failed check), 503 when
    ///   Apple's keys cannot be loaded.
    public func verify(token: String, nonce: String?, now: Int64) throws(APIError) -> AppleIdentity {
        // Refused before Apple's keys are fetched: with no audience configured no token can be
        // accepted, and a token that is not three dot-separated parts is malformed (so an
        // unconfigured server never reaches out to Apple, and such requests answer 401, not 503).
        guard !audiences.isEmpty else { throw Self.invalid("audience") }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { throw Self.invalid("malformed") }
        let keys: [String: RSAPublicKey]
        do {
            keys = try keySet.keys(for: JWT.unverifiedKeyID(token))
        } catch {
            throw APIError.unavailable("Apple's signing keys cannot be loaded; retry later.")
        }
        let claims: JSONValue
        do {
            claims = try JWT.verifyRS256(token, keys: keys, now: now, leewaySeconds: leewaySeconds)
        } catch {
            switch error {
            case .malformed: throw Self.invalid("malformed")
            case .unsupportedAlgorithm: throw Self.invalid("algorithm")
            case .unknownKey: throw Self.invalid("unknown key")
            case .badSignature: throw Self.invalid("signature")
            case .expired: throw Self.invalid("expired")
            case .notYetValid: throw Self.invalid("issued in the future")
            }
        }
        guard claims["iss"]?.stringValue == Self.issuer else { throw Self.invalid("issuer") }
        let audience: String?
        switch claims["aud"] {
        case .string(let aud)?: audience = audiences.contains(aud) ? aud : nil
        case .array(let list)?: audience = list.compactMap(\.stringValue).first(where: audiences.contains)
        default: audience = nil
        }
        guard let audience else { throw Self.invalid("audience") }
        guard claims["iat"] != nil else { throw Self.invalid("malformed") }
        guard let sub = claims["sub"]?.stringValue, !sub.isEmpty, sub.utf8.count <= 255 else {
            throw Self.invalid("subject")
        }
        switch (claims["nonce"], nonce) {
        case (nil, nil):
            break
        case (.string(let expected)?, let raw?):
            guard constantTimeEquals(Array(SHA256.hex(Array(raw.utf8)).utf8), Array(expected.lowercased().utf8)) else {
                throw Self.invalid("nonce")
            }
        default:
            throw Self.invalid("nonce")
        }
        let verified: Bool
        switch claims["email_verified"] {
        case .bool(let b)?: verified = b
        case .string(let s)?: verified = s == "true"
        default: verified = false
        }
        return AppleIdentity(sub: sub, email: claims["email"]?.stringValue, emailVerified: verified, audience: audience)
    }
}
