import SuplashCrypto

/// Opaque sync tokens (spec §5).
///
/// A token is base64url(payload ‖ HMAC-SHA-256(key, payload)[0..<16]) with one of two payloads:
/// - `"y1"` ‖ database id (32 hex characters) ‖ position (8 bytes, big-endian): an
///   incremental pull resumes after `position` and lists tombstones;
/// - `"y2"` ‖ database id ‖ position ‖ snapshot start (8 bytes, big-endian): the next page
///   of a full snapshot begun when the database's head was `snapshotStart`; it lists live
///   documents and only the tombstones of deletes made after `snapshotStart`.
///
/// It cannot be forged; decoding checks the MAC only — the caller compares the database id,
/// the purge horizon (410 `sync_token_expired`) and the head (410 `sync_history_changed`).
public struct SyncTokenCodec: Sendable {
    private let key: HMACSHA256.Key

    /// A decoded token.
    public struct Decoded: Sendable, Equatable {
        /// The id of the database that issued the token.
        public var databaseID: String
        /// The change position the next pull resumes after.
        public var position: Int64
        /// The head position when the full snapshot this token pages began; nil for an
        /// incremental token.
        public var snapshotStart: Int64?
    }

    /// - Parameter key: a secret of ≥ 32 bytes (derived from the server secret).
    public init(key: [UInt8]) { self.key = HMACSHA256.Key(key) }

    /// The token for change `position` of database `databaseID`; with `snapshotStart`, the
    /// token of a full snapshot's next page.
    public func encode(databaseID: String, position: Int64, snapshotStart: Int64? = nil) -> String {
        var payload = Array((snapshotStart == nil ? "y1" : "y2").utf8) + Array(databaseID.utf8)
        Self.append(position, to: &payload)
        if let snapshotStart { Self.append(snapshotStart, to: &payload) }
        return Base64URL.encode(payload + key.authenticationCode(payload).prefix(16))
    }

    private static func append(_ value: Int64, to payload: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { payload.append(UInt8(truncatingIfNeeded: value >> Int64(shift))) }
    }

    private static func int64(_ bytes: ArraySlice<UInt8>) -> Int64 {
        var value: Int64 = 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        return value
    }

    /// The database id, position and snapshot start of a token made by `encode`.
    /// - Throws: 400 `invalid_sync_token` for anything else.
    public func decode(_ token: String) throws(APIError) -> Decoded {
        let invalid = APIError.badRequest(.invalidSyncToken, "The sync token is not one this server issued.")
        guard token.utf8.count <= 256, let bytes = Base64URL.decode(token),
            bytes.count == 2 + 32 + 8 + 16 || bytes.count == 2 + 32 + 8 + 8 + 16
        else {
            throw invalid
        }
        let payload = Array(bytes.dropLast(16))
        let mac = Array(bytes.suffix(16))
        let version: UInt8 = payload.count == 42 ? 0x31 : 0x32
        guard constantTimeEquals(mac, Array(key.authenticationCode(payload).prefix(16))),
            payload[0] == 0x79, payload[1] == version,
            let id = String(validating: payload[2..<34], as: UTF8.self)
        else { throw invalid }
        let position = Self.int64(payload[34..<42])
        let snapshotStart = payload.count == 50 ? Self.int64(payload[42..<50]) : nil
        guard position >= 0, (snapshotStart ?? 0) >= 0 else { throw invalid }
        return Decoded(databaseID: id, position: position, snapshotStart: snapshotStart)
    }

    /// 410 `sync_token_expired` (spec §5): older than the tombstone retention; re-read a
    /// full snapshot.
    public static let expired = APIError(
        .syncTokenExpired,
        detail: "The sync token is older than the tombstone retention; pull a full snapshot.")

    /// 410 `sync_history_changed` (spec §5): the token comes from another database, or is
    /// ahead of this database's history (the server was restored from a backup). The client
    /// keeps its local data, reads a full snapshot and pushes back what the snapshot lacks
    /// or holds older.
    public static let historyChanged = APIError(
        .syncHistoryChanged,
        detail: "The sync token is from another database or ahead of this database's history (a restore); "
            + "keep local data, pull a full snapshot and push back what it lacks or holds older.")
}
