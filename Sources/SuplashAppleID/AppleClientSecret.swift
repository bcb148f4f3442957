import Foundation
import SuplashCrypto
import SuplashJSON
import Synchronization

/// The client secret for Sign in with Apple's REST API (Apple, "Generate and validate tokens";
/// "Creating a client secret"): an ES256 JWT with header `{"alg":"ES256","kid":<key id>}` and
/// claims `{"iss":<team id>,"iat":<Unix seconds>,"exp":<Unix seconds>,"aud":"https://appleid.apple.com","sub":<client id>}`,
/// signed (raw `R ‖ S`) by `JWT.signES256` with the Sign in with Apple `.p8` key.
///
/// Apple accepts `exp` at most 15,777,000 s (about six months) after `iat`. A secret is made per
/// client id (the app's bundle id, or a Services ID for the web) and reused until less than
/// `renewalMarginSeconds` of its lifetime remain; the clock is injected (Unix seconds) so
/// reuse and renewal are tested without waiting. A clock that went backwards past `iat` makes
/// a new secret (Apple would refuse one issued in the future).
///
/// Never logged: neither the secret nor the key.
public final class AppleClientSecretIssuer: Sendable {
    /// The longest lifetime Apple accepts, seconds (`exp - iat`).
    public static let maximumLifetime: Int64 = 15_777_000
    /// The audience Apple requires.
    public static let audience = "https://appleid.apple.com"

    private let key: ES256PrivateKey
    private let keyID: String
    private let teamID: String
    private let lifetime: Int64
    private let renewalMargin: Int64
    private let now: @Sendable () -> Int64
    private let cache = Mutex<[String: (secret: String, issuedAt: Int64, expiresAt: Int64)]>([:])

    /// - Parameters:
    ///   - key: the Sign in with Apple `.p8` key (P-256).
    ///   - keyID: the key's 10-character id from the developer account (`kid`).
    ///   - teamID: the 10-character team id (`iss`).
    ///   - lifetimeSeconds: `exp - iat`, clamped to 300…15,777,000 s (default one day: a leaked
    ///     secret is useful for a short time only, and signing one costs well under a millisecond).
    ///   - renewalMarginSeconds: a secret with less than this left is replaced; clamped to
    ///     60 s … half the lifetime (default 1 hour, or half a short lifetime).
    ///   - now: the clock, Unix seconds.
    public init(
        key: ES256PrivateKey, keyID: String, teamID: String, lifetimeSeconds: Int64 = 86_400,
        renewalMarginSeconds: Int64 = 3_600,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        let lifetime = min(max(lifetimeSeconds, 300), Self.maximumLifetime)
        self.lifetime = lifetime
        self.renewalMargin = min(max(renewalMarginSeconds, 60), lifetime / 2)
        self.now = now
    }

    /// The client secret to send now for `clientID`: the cached one while more than the
    /// renewal margin of its lifetime remains, else a newly signed one (`iat` = now).
    /// - Parameter clientID: the `client_id` (`sub`): the identity token's audience.
    /// - Throws: `ES256Error.signingFailed`.
    public func secret(clientID: String) throws(ES256Error) -> String {
        let time = now()
        return try cache.withLock { (cache) throws(ES256Error) -> String in
            if let existing = cache[clientID], time >= existing.issuedAt, existing.expiresAt - time > renewalMargin {
                return existing.secret
            }
            let expiresAt = time + lifetime
            let claims: JSONValue = .object([
                ("iss", .string(teamID)), ("iat", .int(time)), ("exp", .int(expiresAt)), ("aud", .string(Self.audience)),
                ("sub", .string(clientID)),
            ])
            let secret = try JWT.signES256(claims: claims, keyID: keyID, key: key)
            cache[clientID] = (secret, time, expiresAt)
            return secret
        }
    }

    /// Forgets the cached secret of `clientID` (after Apple answered `invalid_client`, so the
    /// next attempt signs a new one).
    public func discard(clientID: String) {
        _ = cache.withLock { $0.removeValue(forKey: clientID) }
    }
}
