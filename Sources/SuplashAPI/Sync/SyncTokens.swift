import SuplashCrypto

/// Opaque sync tokens (spec §5).
///
/// A token is base64url(`"y1"` ‖ database id (32 hex characters) ‖ position (8 bytes,
/// big-endian) ‖ HMAC-SHA-256(key, all of that)[0..<16]). It cannot be forged; decoding
/// checks the MAC only — the caller compares the database id and the purge horizon
/// (410 `sync_token_expired`).
public struct SyncTokenCodec: Sendable {
    private let key: [UInt8]

    /// - Parameter key: a secret of ≥ 32 bytes (derived from the server secret).
    public init(key: [UInt8]) { self.key = key }

    /// The token for change `position` of database `databaseID`.
    public func encode(databaseID: String, position: Int64) -> String {
        var payload = Array("y1".utf8) + Array(databaseID.utf8)
        for shift in stride(from: 56, through: 0, by: -8) { payload.append(UInt8(truncatingIfNeeded: position >> Int64(shift))) }
        return Base64URL.encode(payload + HMACSHA256.authenticationCode(key: key, message: payload).prefix(16))
    }

    /// The database id and position of a token made by `encode`.
    /// - Throws: 400 `invalid_sync_token` for anything else.
    public func decode(_ token: String) throws(APIError) -> (databaseID: String, position: Int64) {
        let invalid = APIError.badRequest(.invalidSyncToken, "The sync token is not one this server issued.")
        guard token.utf8.count <= 256, let bytes = Base64URL.decode(token), bytes.count == 2 + 32 + 8 + 16 else {
            throw invalid
        }
        let payload = Array(bytes.prefix(42))
        let mac = Array(bytes.suffix(16))
        guard constantTimeEquals(mac, Array(HMACSHA256.authenticationCode(key: key, message: payload).prefix(16))),
              payload[0] == 0x79, payload[1] == 0x31,
              let id = String(validating: payload[2..<34], as: UTF8.self) else { throw invalid }
        var position: Int64 = 0
        for byte in payload[34..<42] { position = position << 8 | Int64(byte) }
        guard position >= 0 else { throw invalid }
        return (id, position)
    }

    /// 410 `sync_token_expired` (spec §5): re-read a full snapshot.
    public static let expired = APIError(
        .syncTokenExpired,
        detail: "The sync token is from another database or older than the tombstone retention; pull a full snapshot.")
}
