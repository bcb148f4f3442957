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

extension HMACSHA256 {
    /// A fixed HMAC-SHA-256 key prepared once (OpenSSL's `EVP_MAC` "HMAC" with digest SHA256,
    /// keyed at init), for keys used on every request (sync and page tokens, rate-limit
    /// buckets). Each `authenticationCode(_:)` duplicates the keyed context
    /// (`EVP_MAC_CTX_dup`), so the algorithm fetch, the parameter parsing and the key's inner
    /// and outer pad blocks are paid once instead of per call as with the one-shot `HMAC()`.
    /// The result equals `HMACSHA256.authenticationCode(key:message:)` (RFC 2104).
    ///
    /// `@unchecked Sendable`: the keyed context is written only in `init` and read (duplicated)
    /// afterwards; `EVP_MAC_CTX_dup` takes its source as `const`.
    public final class Key: @unchecked Sendable {
        private let keyed: OpaquePointer

        /// Prepares `key` (any length; longer than 64 bytes is hashed first, RFC 2104 §2).
        ///
        /// Traps if OpenSSL has no HMAC or SHA-256 (a broken installation, not an input error).
        public init(_ key: [UInt8]) {
            guard let mac = EVP_MAC_fetch(nil, "HMAC", nil), let context = EVP_MAC_CTX_new(mac) else {
                preconditionFailure("OpenSSL provides no HMAC")
            }
            EVP_MAC_free(mac)  // the context holds its own reference
            var empty: UInt8 = 0
            let ok = withUnsafeMutablePointer(to: &empty) { emptyPointer in
                key.withUnsafeBytes { keyBytes in
                    "digest".withCString { name in
                        "SHA256".withCString { value in
                            var params = [
                                OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: value), 0),
                                OSSL_PARAM_construct_end(),
                            ]
                            return EVP_MAC_init(
                                context,
                                keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(emptyPointer),
                                keyBytes.count, &params)
                        }
                    }
                }
            }
            precondition(ok == 1, "HMAC-SHA-256 key set-up cannot fail for in-memory input")
            keyed = context
        }

        deinit { EVP_MAC_CTX_free(keyed) }

        /// The 32-byte HMAC-SHA-256 of `message` under this key.
        public func authenticationCode(_ message: [UInt8]) -> [UInt8] {
            guard let context = EVP_MAC_CTX_dup(keyed) else { preconditionFailure("out of memory duplicating an HMAC context") }
            defer { EVP_MAC_CTX_free(context) }
            var mac = [UInt8](repeating: 0, count: 32)
            var length = 0
            var empty: UInt8 = 0
            let ok = withUnsafeMutablePointer(to: &empty) { emptyPointer in
                message.withUnsafeBufferPointer { bytes in
                    mac.withUnsafeMutableBufferPointer { out in
                        EVP_MAC_update(context, bytes.baseAddress ?? UnsafePointer(emptyPointer), bytes.count) == 1
                            && EVP_MAC_final(context, out.baseAddress, &length, 32) == 1
                    }
                }
            }
            precondition(ok && length == 32, "HMAC-SHA-256 cannot fail for in-memory input")
            return mac
        }
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
