#if canImport(Glibc)
    import Glibc
#endif

/// Why sealing or opening a value failed. Descriptions are fixed strings: no plaintext, no
/// ciphertext, no key material.
public enum SealingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The envelope is not `s1.<keyId>.<payload>` with a 16-hex-digit key id and a base64url
    /// payload of at least nonce + tag (28 bytes).
    case malformedEnvelope
    /// The envelope's version prefix is not one this build reads (only `s1`).
    case unsupportedVersion
    /// The envelope names a key id that is not in the keyring (the key file is missing).
    case unknownKeyID(String)
    /// The tag did not verify: a changed byte, the wrong associated data (another table, column
    /// or row) or the wrong key.
    case authenticationFailed
    /// A key or nonce of the wrong length was handed to the raw primitive.
    case invalidKeyOrNonce
    /// OpenSSL failed to run the cipher.
    case cipherFailed
    /// HKDF failed (empty input, length out of range, OpenSSL failure).
    case keyDerivationFailed
    /// An APNs device token that is not 16–200 hex digits of even count.
    case invalidDeviceToken

    /// A fixed, content-free description (the key id is not secret: it is derived one way).
    public var description: String {
        switch self {
        case .malformedEnvelope: return "sealed value is malformed"
        case .unsupportedVersion: return "sealed value has an unsupported version"
        case .unknownKeyID(let id): return "sealed value names key id \(id), which no configured sealing key file has"
        case .authenticationFailed: return "sealed value failed authentication (tampered, wrong row or wrong key)"
        case .invalidKeyOrNonce: return "AES-256-GCM key or nonce has the wrong length"
        case .cipherFailed: return "AES-256-GCM failed in OpenSSL"
        case .keyDerivationFailed: return "HKDF key derivation failed"
        case .invalidDeviceToken: return "APNs device token is not an even number (16-200) of hex digits"
        }
    }
}

/// Why a sealing key file was refused. Each description names the problem, the file and what to do.
public enum SealingKeyFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be opened or read (`errno`).
    case unreadable(path: String, errno: Int32)
    /// Not a regular file (a directory, device, FIFO …).
    case notRegularFile(path: String)
    /// The file is not exactly 32 bytes.
    case wrongSize(path: String, size: Int)
    /// Group or others may read or write the file (`mode` is its permission bits).
    case tooPermissive(path: String, mode: UInt32)
    /// Two configured files hold the same key.
    case duplicateKey(path: String)

    /// What went wrong, which file, and what to do (the key itself is never shown).
    public var description: String {
        switch self {
        case .unreadable(let path, let code):
            return "sealing key file \(path) cannot be read (errno \(code)); check the path in security.sealingKeyFile "
                + "and that the server's user owns the file"
        case .notRegularFile(let path):
            return "sealing key file \(path) is not a regular file; point security.sealingKeyFile at a file of 32 random bytes"
        case .wrongSize(let path, let size):
            return "sealing key file \(path) holds \(size) bytes, not 32; create one with "
                + "`head -c 32 /dev/urandom > FILE && chmod 600 FILE` (raw bytes, not hex or base64)"
        case .tooPermissive(let path, let mode):
            return "sealing key file \(path) has mode \(String(mode, radix: 8)), readable or writable by group or others; "
                + "run `chmod 600 \(path)`"
        case .duplicateKey(let path):
            return "sealing key file \(path) holds the same key as another configured key file; list each key once"
        }
    }
}

/// One 32-byte AES-256-GCM sealing key and its public key id.
///
/// The key id is the first 8 bytes of HMAC-SHA-256(key, "suplash sealing key id v1") as 16
/// lower-case hex digits: it names the key inside envelopes and logs without revealing it.
/// `description` shows only the id.
public struct SealingKey: Sendable, CustomStringConvertible {
    /// The key id (16 lower-case hex digits).
    public let id: String
    let bytes: [UInt8]
    /// The blind-index subkey (HKDF-SHA-256 of the key, see `SealingKeyring.blindIndex`).
    let blindIndexKey: [UInt8]

    /// A key from exactly 32 bytes (`nil` otherwise).
    public init?(bytes: [UInt8]) {
        guard bytes.count == AES256GCM.keyLength,
            let subkey = try? HKDFSHA256.deriveKey(
                inputKeyingMaterial: bytes, salt: Array("suplash blind index v1".utf8),
                info: Array("apns device token".utf8), length: 32)
        else { return nil }
        self.bytes = bytes
        self.id = hexString(HMACSHA256.authenticationCode(key: bytes, message: Array("suplash sealing key id v1".utf8)).prefix(8))
        self.blindIndexKey = subkey
    }

    /// `SealingKey(<id>)` — never the key.
    public var description: String { "SealingKey(\(id))" }

    /// Reads a key file: a regular file of exactly 32 bytes that neither group nor others may
    /// read or write (mode `0600` or `0400`). Symbolic links are followed; the checks apply to
    /// the file they lead to. Opened non-blocking, so a FIFO in its place is refused, not waited on.
    /// - Throws: `SealingKeyFileError` naming the file and the fix.
    public static func load(path: String) throws(SealingKeyFileError) -> SealingKey {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .unreadable(path: path, errno: errno) }
        defer { _ = Glibc.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .unreadable(path: path, errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        let permissions = UInt32(info.st_mode & 0o777)
        guard permissions & 0o077 == 0 else { throw .tooPermissive(path: path, mode: permissions) }
        guard info.st_size == AES256GCM.keyLength else { throw .wrongSize(path: path, size: Int(info.st_size)) }
        // Read one byte more than needed so a file that grew after fstat is still refused.
        var buffer = [UInt8](repeating: 0, count: AES256GCM.keyLength + 1)
        defer { wipe(&buffer) }
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor, raw.baseAddress.map { $0 + total }, raw.count - total)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, errno: errno)
            }
            if count == 0 { break }
            total += count
        }
        guard total == AES256GCM.keyLength, let key = SealingKey(bytes: Array(buffer.prefix(total))) else {
            throw .wrongSize(path: path, size: total)
        }
        return key
    }
}

/// Where a sealed value lives: its table, column and row id. It is bound into the associated
/// data, so a value copied to another row, column or table does not open.
public struct SealingContext: Sendable, Hashable {
    /// The table name (e.g. `apple_tokens`).
    public var table: String
    /// The column name (e.g. `refresh_token`).
    public var column: String
    /// The row's primary key as text (e.g. a UUID).
    public var rowID: String

    /// Creates a context.
    public init(table: String, column: String, rowID: String) {
        self.table = table
        self.column = column
        self.rowID = rowID
    }

    /// The associated data for envelope version `version` and key `keyID`: each of
    /// `version`, `keyID`, `table`, `column`, `rowID` as a 4-byte big-endian UTF-8 length
    /// followed by its bytes (length prefixes make the encoding unambiguous).
    func associatedData(version: String, keyID: String) -> [UInt8] {
        var out: [UInt8] = []
        for part in [version, keyID, table, column, rowID] {
            let bytes = Array(part.utf8)
            let n = UInt32(truncatingIfNeeded: bytes.count)
            out += [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            out += bytes
        }
        return out
    }
}

/// Seals secrets at rest with AES-256-GCM (`AES256GCM`) under the current key and opens values
/// sealed under the current key or any older configured key.
///
/// Envelope (text, storable in a `TEXT` column), version 1:
///
///     s1.<keyId>.<base64url(nonce ‖ ciphertext ‖ tag)>
///
/// `keyId` is the sealing key's id (16 lower-case hex digits, `SealingKey.id`); the nonce is 12
/// bytes from `RAND_bytes`, new for every seal; the tag is 16 bytes; base64url is unpadded
/// (RFC 4648 §5). The associated data is `SealingContext.associatedData(version: "s1", keyID:)`.
/// With random 96-bit nonces one key should seal fewer than 2^32 values (SP 800-38D §8.3);
/// adding a key and resealing resets the count.
///
/// Rotation: put the new key first (`security.sealingKeyFile`), keep the old files as older
/// keys, reseal every value whose `keyID(of:)` is not `currentKeyID` (and recompute blind
/// indexes), then drop the old files.
public struct SealingKeyring: Sendable {
    /// The version prefix of envelopes this build writes.
    public static let version = "s1"

    /// The key new values are sealed with.
    public let current: SealingKey
    private let keys: [String: SealingKey]

    /// A keyring from the current key and older keys (kept for opening only).
    /// Returns nil when two keys are equal.
    public init?(current: SealingKey, older: [SealingKey] = []) {
        var keys = [current.id: current]
        for key in older {
            guard keys[key.id] == nil else { return nil }
            keys[key.id] = key
        }
        self.current = current
        self.keys = keys
    }

    /// Loads the current key file (`security.sealingKeyFile`) and older key files, in order.
    /// - Throws: `SealingKeyFileError` for the first file refused (`duplicateKey` names the
    ///   later of two files holding the same key).
    public static func load(currentFile: String, olderFiles: [String] = []) throws(SealingKeyFileError) -> SealingKeyring {
        let current = try SealingKey.load(path: currentFile)
        var older: [SealingKey] = []
        var seen: Set<String> = [current.id]
        for path in olderFiles {
            let key = try SealingKey.load(path: path)
            guard seen.insert(key.id).inserted else { throw .duplicateKey(path: path) }
            older.append(key)
        }
        guard let ring = SealingKeyring(current: current, older: older) else { throw .duplicateKey(path: currentFile) }
        return ring
    }

    /// The id of the key new values are sealed with.
    public var currentKeyID: String { current.id }
    /// The ids of every configured key: the current key first, then the older keys sorted.
    public var keyIDs: [String] { [current.id] + keys.keys.filter { $0 != current.id }.sorted() }

    /// Seals `plaintext` for `context` under the current key with a fresh random nonce.
    /// - Returns: the envelope `s1.<keyId>.<base64url>` (ASCII).
    /// - Throws: `SealingError.cipherFailed` if OpenSSL fails.
    public func seal(_ plaintext: [UInt8], context: SealingContext) throws(SealingError) -> String {
        let nonce = SecureRandom.bytes(AES256GCM.nonceLength)
        let aad = context.associatedData(version: Self.version, keyID: current.id)
        let (ciphertext, tag) = try AES256GCM.seal(plaintext, key: current.bytes, nonce: nonce, associatedData: aad)
        return Self.version + "." + current.id + "." + Base64URL.encode(nonce + ciphertext + tag)
    }

    /// `seal(_:context:)` for UTF-8 text.
    public func seal(_ text: String, context: SealingContext) throws(SealingError) -> String {
        try seal(Array(text.utf8), context: context)
    }

    /// Opens an envelope sealed for `context` under any configured key.
    /// - Returns: the plaintext.
    /// - Throws: `SealingError.malformedEnvelope`, `.unsupportedVersion`, `.unknownKeyID`,
    ///   `.authenticationFailed` (tampered, another table/column/row, or wrong key).
    public func open(_ envelope: String, context: SealingContext) throws(SealingError) -> [UInt8] {
        let (version, keyID, payload) = try Self.parse(envelope)
        guard let key = keys[keyID] else { throw .unknownKeyID(keyID) }
        let nonce = Array(payload[0..<AES256GCM.nonceLength])
        let ciphertext = Array(payload[AES256GCM.nonceLength..<(payload.count - AES256GCM.tagLength)])
        let tag = Array(payload[(payload.count - AES256GCM.tagLength)...])
        let aad = context.associatedData(version: version, keyID: keyID)
        return try AES256GCM.open(ciphertext, tag: tag, key: key.bytes, nonce: nonce, associatedData: aad)
    }

    /// `open(_:context:)` for values sealed from UTF-8 text.
    /// - Throws: as `open(_:context:)`; `.malformedEnvelope` when the plaintext is not UTF-8.
    public func openText(_ envelope: String, context: SealingContext) throws(SealingError) -> String {
        var bytes = try open(envelope, context: context)
        defer { wipe(&bytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformedEnvelope }
        return text
    }

    /// The key id an envelope names (without opening it), for finding values to reseal.
    /// - Throws: `SealingError.malformedEnvelope`, `.unsupportedVersion`.
    public static func keyID(of envelope: String) throws(SealingError) -> String {
        try parse(envelope).keyID
    }

    /// True when `envelope` was sealed under another key than the current one.
    /// - Throws: `SealingError.malformedEnvelope`, `.unsupportedVersion`.
    public func needsReseal(_ envelope: String) throws(SealingError) -> Bool {
        try Self.parse(envelope).keyID != current.id
    }

    /// Opens `envelope` and seals its plaintext again under the current key, same context.
    /// - Throws: as `open(_:context:)`.
    public func reseal(_ envelope: String, context: SealingContext) throws(SealingError) -> String {
        var plaintext = try open(envelope, context: context)
        defer { wipe(&plaintext) }
        return try seal(plaintext, context: context)
    }

    /// The blind index of an APNs device token: HMAC-SHA-256 of the normalised token (lower-case
    /// hex) under a subkey of the current sealing key, as 64 lower-case hex digits. Equal tokens
    /// give equal indexes, so a unique index finds and de-duplicates tokens without storing
    /// them in plaintext. The subkey is HKDF-SHA-256 (RFC 5869, OpenSSL `EVP_KDF`) of the sealing
    /// key with salt `"suplash blind index v1"` and info `"apns device token"`.
    ///
    /// Indexes depend on the key: after a key change, reseal also recomputes them (while both
    /// keys are configured, `blindIndexes` gives the index under each for lookups).
    /// - Parameter apnsDeviceToken: hex, either case, 16–200 digits, even count.
    /// - Throws: `SealingError.invalidDeviceToken`.
    public func blindIndex(apnsDeviceToken: String) throws(SealingError) -> String {
        try Self.blindIndex(apnsDeviceToken, key: current)
    }

    /// The blind index of an APNs device token under every configured key, current key first.
    /// - Throws: `SealingError.invalidDeviceToken`.
    public func blindIndexes(apnsDeviceToken: String) throws(SealingError) -> [String] {
        var out: [String] = []
        for id in keyIDs {
            guard let key = keys[id] else { continue }
            out.append(try Self.blindIndex(apnsDeviceToken, key: key))
        }
        return out
    }

    /// The normalised form of a device token: lower-case hex.
    /// - Throws: `SealingError.invalidDeviceToken` unless 16–200 hex digits, even count.
    public static func normalizedDeviceToken(_ token: String) throws(SealingError) -> String {
        let bytes = Array(token.utf8)
        guard bytes.count >= 16, bytes.count <= 200, bytes.count % 2 == 0 else { throw .invalidDeviceToken }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for b in bytes {
            switch b {
            case 0x30...0x39, 0x61...0x66: out.append(b)
            case 0x41...0x46: out.append(b + 0x20)
            default: throw .invalidDeviceToken
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func blindIndex(_ token: String, key: SealingKey) throws(SealingError) -> String {
        let normalized = try normalizedDeviceToken(token)
        return hexString(HMACSHA256.authenticationCode(key: key.blindIndexKey, message: Array(normalized.utf8)))
    }

    private static func parse(_ envelope: String) throws(SealingError) -> (version: String, keyID: String, payload: [UInt8]) {
        let parts = envelope.utf8.split(separator: 0x2E, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformedEnvelope }
        let version = String(decoding: parts[0], as: UTF8.self)
        guard version == Self.version else {
            // Anything shaped like `s<digits>` is a version we may write later; the rest is junk.
            let digits = parts[0].dropFirst()
            if parts[0].first == 0x73, !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) { throw .unsupportedVersion }
            throw .malformedEnvelope
        }
        let keyID = String(decoding: parts[1], as: UTF8.self)
        guard parts[1].count == 16, parts[1].allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .malformedEnvelope
        }
        guard let payload = Base64URL.decode(bytes: parts[2]),
            payload.count >= AES256GCM.nonceLength + AES256GCM.tagLength
        else { throw .malformedEnvelope }
        return (version, keyID, payload)
    }
}
