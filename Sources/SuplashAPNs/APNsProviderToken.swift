import Foundation
import SuplashCrypto
import SuplashJSON
import Synchronization

/// The APNs provider authentication token (Apple, "Establishing a token-based connection to
/// APNs"): an ES256 JWT with header `{"alg":"ES256","kid":<key id>}` and claims
/// `{"iss":<team id>,"iat":<Unix seconds>}`, signed with the `.p8` key.
///
/// Apple accepts a token for an hour and answers `TooManyProviderTokenUpdates` when a
/// connection's token changes more often than every 20 minutes. So one token is reused until
/// it is `refreshAfter` old (default 40 minutes, kept within 20–50), and a forced refresh
/// (after `ExpiredProviderToken`) is refused while the token is younger than 20 minutes.
/// The clock is injected (Unix seconds) so the rules are tested without waiting.
///
/// Never logged: neither the token nor the key.
public final class APNsProviderToken: Sendable {
    /// Shortest age at which the token may be replaced, seconds (Apple: 20 minutes).
    public static let minimumRefreshAge: Int64 = 20 * 60
    /// Longest age a token is used for, seconds (Apple rejects tokens older than 60 minutes).
    public static let maximumRefreshAge: Int64 = 50 * 60

    private let key: ES256PrivateKey
    private let keyID: String
    private let teamID: String
    private let refreshAfter: Int64
    private let now: @Sendable () -> Int64
    private let state = Mutex<(token: String, issuedAt: Int64)?>(nil)

    /// - Parameters:
    ///   - key: the `.p8` signing key.
    ///   - keyID: the key's 10-character id from the developer account (`kid`).
    ///   - teamID: the 10-character team id (`iss`).
    ///   - refreshAfterSeconds: age at which a new token is made, clamped to 1200…3000 s.
    ///   - now: the clock, Unix seconds.
    public init(
        key: ES256PrivateKey, keyID: String, teamID: String, refreshAfterSeconds: Int64 = 40 * 60,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.refreshAfter = min(max(refreshAfterSeconds, Self.minimumRefreshAge), Self.maximumRefreshAge)
        self.now = now
    }

    /// The token to send now: the current one while it is younger than `refreshAfter`, else a
    /// newly signed one (`iat` = now). A clock that went backwards keeps the current token.
    /// - Throws: `ES256Error.signingFailed`.
    public func current() throws(ES256Error) -> String {
        let time = now()
        return try state.withLock { (state) throws(ES256Error) -> String in
            if let existing = state, time - existing.issuedAt < refreshAfter { return existing.token }
            let token = try sign(at: time)
            state = (token, time)
            return token
        }
    }

    /// Replaces `rejected` after Apple called it expired (`ExpiredProviderToken`), unless that
    /// would break the 20-minute rule.
    /// - Returns: true when a token newer than `rejected` is available (made now, or already
    ///   made by another caller); false when `rejected` is younger than 20 minutes, which means
    ///   our clock or Apple's disagree: a configuration problem, not something to retry.
    /// - Throws: `ES256Error.signingFailed`.
    public func refresh(rejected: String) throws(ES256Error) -> Bool {
        let time = now()
        return try state.withLock { (state) throws(ES256Error) -> Bool in
            guard let existing = state else {
                state = (try sign(at: time), time)
                return true
            }
            if existing.token != rejected { return true }
            guard time - existing.issuedAt >= Self.minimumRefreshAge else { return false }
            state = (try sign(at: time), time)
            return true
        }
    }

    /// When the current token was issued (Unix seconds), or nil before the first.
    public var issuedAt: Int64? { state.withLock { $0?.issuedAt } }

    private func sign(at time: Int64) throws(ES256Error) -> String {
        try JWT.signES256(claims: .object([("iss", .string(teamID)), ("iat", .int(time))]), keyID: keyID, key: key)
    }
}
