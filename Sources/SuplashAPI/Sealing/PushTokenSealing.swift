import SuplashCrypto
import SuplashDomain

/// APNs device tokens sealed at rest (docs/apple.md, "Sealed secrets"): each token is sealed
/// with AES-256-GCM (`SealingKeyring`) for (`device_tokens`, `token`,
/// `<user>/<device>/<push type>`) as its lower-case hex, and found by its blind index
/// (`SealingKeyring.blindIndex(apnsDeviceToken:)`, HMAC-SHA-256 under an HKDF subkey of the
/// sealing key). Without a sealing key no token is kept.
public enum PushTokenSealing {
    /// The sealed form of `tokens` of device `deviceID` of `userID`.
    /// - Throws: `SealingError` (OpenSSL failed, or a token outside 8–100 bytes).
    public static func seal(
        _ tokens: [PushToken], userID: String, deviceID: String, keyring: SealingKeyring
    ) throws(SealingError) -> [SealedPushToken] {
        var out: [SealedPushToken] = []
        for token in tokens {
            out.append(
                try seal(hex(token.token), pushType: token.pushType, userID: userID, deviceID: deviceID, keyring: keyring))
        }
        return out
    }

    /// The token of a claimed push as APNs wants it in the request path (lower-case hex),
    /// opened with `keyring` just before sending.
    /// - Throws: `SealingError` (`.unknownKeyID` when the envelope's key is not configured,
    ///   `.authenticationFailed` for a changed or moved envelope).
    public static func open(_ push: ClaimedPush, keyring: SealingKeyring) throws(SealingError) -> String {
        try keyring.openText(
            push.sealedToken,
            context: context(DeviceTokenSealing.rowID(userID: push.userID, deviceID: push.deviceID, pushType: push.pushType)))
    }

    /// The sealing context of a device token row.
    public static func context(_ rowID: String) -> SealingContext {
        SealingContext(table: DeviceTokenSealing.table, column: DeviceTokenSealing.column, rowID: rowID)
    }

    /// What `sealStoredPlaintext` did.
    public struct StartupOutcome: Sendable, Equatable {
        /// Rows sealed (a key is configured).
        public var sealed: Int
        /// Rows deleted (no key: no token is kept).
        public var dropped: Int

        /// - Parameters: see the properties.
        public init(sealed: Int, dropped: Int) {
            self.sealed = sealed
            self.dropped = dropped
        }
    }

    /// At start-up, after the migrations: seals every device token row still holding its
    /// plaintext (written before tokens were sealed) or, without a sealing key, deletes them;
    /// when any row changed, compacts the database (`compactAfterSealing`: SQLite `VACUUM`).
    /// Rows are read and sealed `batchSize` at a time in key order (one transaction per
    /// batch), so memory stays bounded however many rows an upgraded database holds.
    /// - Throws: the store's error, or `SealingError` (OpenSSL failed).
    public static func sealStoredPlaintext(
        keyring: SealingKeyring?, store: any SealedValueRepository, batchSize: Int = 1000
    ) throws -> StartupOutcome {
        var outcome = StartupOutcome(sealed: 0, dropped: 0)
        var seen = false
        if let keyring {
            var after: PlaintextDeviceToken?
            while true {
                let rows = try store.plaintextDeviceTokens(after: after, limit: batchSize)
                guard let last = rows.last else { break }
                seen = true
                after = last
                var sealed: [(PlaintextDeviceToken, SealedPushToken)] = []
                for row in rows {
                    let token: SealedPushToken
                    do {
                        token = try seal(
                            hex(row.token), pushType: row.pushType, userID: row.userID, deviceID: row.deviceID,
                            keyring: keyring)
                    } catch .invalidDeviceToken {
                        continue  // not a token the registry accepts: deleted below with the unsealed rest
                    }
                    sealed.append((row, token))
                }
                outcome.sealed += try store.sealPlaintextDeviceTokens(sealed)
                if rows.count < batchSize { break }
            }
        } else {
            seen = !(try store.plaintextDeviceTokens(after: nil, limit: 1).isEmpty)
        }
        guard seen else { return outcome }
        // Without a key every row; with one, rows that are no valid token.
        outcome.dropped = try store.dropPlaintextDeviceTokens()
        try store.compactAfterSealing()
        return outcome
    }

    static func seal(
        _ hex: String, pushType: PushType, userID: String, deviceID: String, keyring: SealingKeyring
    ) throws(SealingError) -> SealedPushToken {
        let normalized = try SealingKeyring.normalizedDeviceToken(hex)
        let rowID = DeviceTokenSealing.rowID(userID: userID, deviceID: deviceID, pushType: pushType)
        return SealedPushToken(
            pushType: pushType, envelope: try keyring.seal(normalized, context: context(rowID)),
            blindIndex: try keyring.blindIndex(apnsDeviceToken: normalized),
            lookupIndexes: try keyring.blindIndexes(apnsDeviceToken: normalized))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
