import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface.
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { raw in
            digest.withUnsafeMutableBytes { out in
                EVP_Digest(
                    raw.baseAddress, raw.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) cannot fail for in-memory input")
        return digest
    }

    /// The digest of `bytes` as 64 lower-case hex characters.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        hexString(hash(bytes))
    }
}

/// Lower-case hex of `bytes` (`[0xab, 0x01]` → `"ab01"`).
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// SHA-1 (FIPS 180-4) through OpenSSL's EVP interface. Not for security: it exists for
/// name-based UUIDs (RFC 9562 version 5), which are defined on SHA-1.
public enum SHA1 {
    /// The 20-byte SHA-1 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { raw in
            digest.withUnsafeMutableBytes { out in
                EVP_Digest(
                    raw.baseAddress, raw.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    &length, EVP_sha1(), nil)
            }
        }
        precondition(ok == 1 && length == 20, "EVP_Digest(SHA-1) cannot fail for in-memory input")
        return digest
    }
}
