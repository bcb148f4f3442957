import Foundation
import SuplashJSON

/// Access tokens whose signature and claims were already verified, by their exact text, so
/// that a client sending the same bearer token on every request pays for the HMAC, the two
/// base64url decodes and the two JSON parses once (they were about a quarter of the
/// instructions of a `GET` by id).
///
/// Only a token that passed `JWT.verifyHS256` in full is stored, under the complete token
/// string, so a changed byte anywhere (header, claims or signature) is a miss and is
/// verified from scratch. The time-dependent checks (`exp`, and `iat`/`nbf` against the
/// leeway) are repeated on every hit; revocation is checked by the caller after this, as
/// before. The cache belongs to one `TokenService`, whose keys never change.
///
/// Bounded: at `capacity` entries it is emptied (an expired or evicted token is simply
/// verified again).
final class VerifiedTokenCache: @unchecked Sendable {
    // Sendable: `entries` is only touched with `lock` held.
    struct Claims {
        let userID: String
        let sessionID: String
        let issuedAt: Int64
        let expiresAt: Int64
        let notBefore: Int64?
    }

    /// A token's bytes as a key: equal when every byte is equal (a `String` key would also
    /// answer for a canonically equivalent spelling, U+212A for `K`, which is not the token
    /// issued). Hashed on its length and its last 43 bytes only — a stored token ends with its
    /// HMAC-SHA256 signature in base64url (RFC 7515 §3.1), which differs between any two
    /// tokens — so a look-up hashes 43 bytes, not the whole token (the hasher is seeded per
    /// process, so chosen tails cannot flood a bucket).
    struct TokenKey: Hashable {
        let token: CodePointKey

        static func == (lhs: TokenKey, rhs: TokenKey) -> Bool { lhs.token == rhs.token }

        func hash(into hasher: inout Hasher) {
            var text = token.string
            text.withUTF8 { bytes in
                hasher.combine(bytes.count)
                let tail = UnsafeBufferPointer(rebasing: bytes[max(0, bytes.count - 43)...])
                hasher.combine(bytes: UnsafeRawBufferPointer(tail))
            }
        }
    }

    private let lock = NSLock()
    private var entries: [TokenKey: Claims] = [:]
    let capacity: Int

    init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    /// The cached claims of `token` if they are still valid at `now` (Unix seconds) with
    /// `leeway` seconds of skew — the same time checks as `JWT.verifyHS256`.
    func claims(for token: String, now: Int64, leeway: Int64) -> Claims? {
        lock.lock()
        let found = entries[TokenKey(token: CodePointKey(token))]
        lock.unlock()
        guard let found else { return nil }
        let (earliest, underflow) = now.subtractingReportingOverflow(leeway)
        guard underflow || found.expiresAt > earliest else { return nil }
        let (latest, overflow) = now.addingReportingOverflow(leeway)
        if !overflow && (found.issuedAt > latest || (found.notBefore ?? Int64.min) > latest) { return nil }
        return found
    }

    /// Remembers a token that has just been verified in full.
    func store(_ token: String, _ claims: Claims) {
        lock.lock()
        if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        entries[TokenKey(token: CodePointKey(token))] = claims
        lock.unlock()
    }

    /// Entries held (for tests).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }
}
