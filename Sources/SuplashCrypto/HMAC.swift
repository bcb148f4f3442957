import COpenSSL

/// HMAC-SHA-256 (RFC 2104, FIPS 198-1) through OpenSSL's one-shot `HMAC()`.
public enum HMACSHA256 {
    /// The 32-byte HMAC-SHA-256 of `message` under `key` (any key length; keys longer than
    /// the 64-byte block are hashed first, per RFC 2104 §2).
    public static func authenticationCode(key: [UInt8], message: some Collection<UInt8>) -> [UInt8] {
        if let mac = message.withContiguousStorageIfAvailable({ compute(key: key, message: UnsafeRawBufferPointer($0)) }) {
            return mac
        }
        return Array(message).withUnsafeBytes { compute(key: key, message: $0) }
    }

    private static func compute(key: [UInt8], message: UnsafeRawBufferPointer) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // OpenSSL rejects a NULL key/data pointer for some inputs; give it a valid pointer
        // for empty buffers.
        var empty: UInt8 = 0
        let result = key.withUnsafeBytes { keyBytes in
            mac.withUnsafeMutableBufferPointer { out in
                withUnsafeMutablePointer(to: &empty) { emptyPointer in
                    HMAC(
                        EVP_sha256(),
                        keyBytes.baseAddress ?? UnsafeRawPointer(emptyPointer), Int32(keyBytes.count),
                        message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(emptyPointer), message.count,
                        out.baseAddress, &length)
                }
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA-256 cannot fail for in-memory input")
        return mac
    }
}

/// Cryptographically secure random bytes from OpenSSL's CSPRNG (`RAND_bytes`).
public enum SecureRandom {
    /// `count` random bytes (`count` ≥ 0).
    ///
    /// Traps if the CSPRNG fails (it is seeded from the OS; failure means the process cannot
    /// make secrets safely, and returning predictable bytes would be worse than stopping).
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "SecureRandom.bytes: count out of range")
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "RAND_bytes failed: the CSPRNG is unavailable")
        return out
    }
}

/// Compares two byte strings in time that depends only on their length (OpenSSL
/// `CRYPTO_memcmp`); `false` when the lengths differ. Use for MACs, token hashes, keys.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in
            CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0
        }
    }
}
