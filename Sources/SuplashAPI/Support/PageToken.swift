import SuplashCrypto

/// Opaque keyset page tokens (AIP-158 naming; design notes "Reads").
///
/// A token is base64url(`payload` ‖ HMAC-SHA-256(key, payload)[0..<16]) where the payload
/// holds the caller scope (user id), a digest of the query's filters and the last row's
/// sort key. It cannot be forged, and is refused (400 `invalid_page_token`) for another
/// scope or other filters.
public struct PageTokenCodec: Sendable {
    private let key: HMACSHA256.Key

    /// - Parameter key: a secret of ≥ 32 bytes (derived from the server secret).
    public init(key: [UInt8]) { self.key = HMACSHA256.Key(key) }

    /// Encodes `position` (the sort-key fields, none containing U+0000) for `scope` and `filters`.
    public func encode(scope: String, filters: String, position: [String]) -> String {
        let payload = Array((["p1", scope, digest(filters)] + position).joined(separator: "\u{0}").utf8)
        let mac = key.authenticationCode(payload).prefix(16)
        return Base64URL.encode(payload + mac)
    }

    /// Decodes a token made by `encode` with the same scope and filters.
    /// - Throws: 400 `invalid_page_token` for anything else.
    public func decode(_ token: String, scope: String, filters: String, fields: Int) throws(APIError) -> [String] {
        let invalid = APIError.badRequest(.invalidPageToken, "The page token is invalid or belongs to another query.")
        guard token.utf8.count <= 1024, let bytes = Base64URL.decode(token), bytes.count > 16 else { throw invalid }
        let payload = Array(bytes.dropLast(16))
        let mac = Array(bytes.suffix(16))
        let expected = Array(key.authenticationCode(payload).prefix(16))
        guard constantTimeEquals(mac, expected), let text = String(validating: payload, as: UTF8.self) else { throw invalid }
        let parts = text.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 + fields, parts[0] == "p1", parts[1] == scope, parts[2] == digest(filters) else {
            throw invalid
        }
        return Array(parts.dropFirst(3))
    }

    private func digest(_ filters: String) -> String {
        String(SHA256.hex(Array(filters.utf8)).prefix(16))
    }
}
