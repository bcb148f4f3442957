// Base64 (RFC 4648 §4) and base64url (RFC 4648 §5). Not a cryptographic primitive; the
// decoders are strict so that every byte string has exactly one accepted encoding.

private let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
private let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

private func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
    let input = Array(bytes)
    var out: [UInt8] = []
    out.reserveCapacity((input.count + 2) / 3 * 4)
    var k = 0
    while k + 3 <= input.count {
        let n = UInt32(input[k]) << 16 | UInt32(input[k + 1]) << 8 | UInt32(input[k + 2])
        out.append(alphabet[Int(n >> 18 & 63)])
        out.append(alphabet[Int(n >> 12 & 63)])
        out.append(alphabet[Int(n >> 6 & 63)])
        out.append(alphabet[Int(n & 63)])
        k += 3
    }
    let rest = input.count - k
    if rest == 1 {
        let n = UInt32(input[k]) << 16
        out.append(alphabet[Int(n >> 18 & 63)])
        out.append(alphabet[Int(n >> 12 & 63)])
        if pad { out.append(contentsOf: [0x3D, 0x3D]) }
    } else if rest == 2 {
        let n = UInt32(input[k]) << 16 | UInt32(input[k + 1]) << 8
        out.append(alphabet[Int(n >> 18 & 63)])
        out.append(alphabet[Int(n >> 12 & 63)])
        out.append(alphabet[Int(n >> 6 & 63)])
        if pad { out.append(0x3D) }
    }
    return String(decoding: out, as: UTF8.self)
}

/// Decodes unpadded base64 text in `alphabet` (62 = `plus`, 63 = `slash`). Rejects any other
/// character, a length ≡ 1 (mod 4), and non-zero unused bits in the last character.
private func decodeUnpadded(_ chars: ArraySlice<UInt8>, plus: UInt8, slash: UInt8) -> [UInt8]? {
    guard chars.count % 4 != 1 else { return nil }
    func value(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x41...0x5A: return UInt32(c - 0x41)
        case 0x61...0x7A: return UInt32(c - 0x61 + 26)
        case 0x30...0x39: return UInt32(c - 0x30 + 52)
        case plus: return 62
        case slash: return 63
        default: return nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(chars.count * 3 / 4)
    var acc: UInt32 = 0
    var bits = 0
    for c in chars {
        guard let v = value(c) else { return nil }
        acc = acc << 6 | v
        bits += 6
        if bits >= 8 {
            bits -= 8
            out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            acc &= (1 << UInt32(bits)) - 1
        }
    }
    // Leftover bits (2 or 4) must be zero for the encoding to be canonical.
    guard acc == 0 else { return nil }
    return out
}

/// base64url (RFC 4648 §5): `-` and `_` instead of `+` and `/`, as used by JWS/JWT (RFC 7515 §2).
public enum Base64URL {
    /// The unpadded base64url text of `bytes` (`[0xfb, 0xff]` → `"-_8"`).
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        SuplashCrypto.encode(bytes, alphabet: urlAlphabet, pad: false)
    }

    /// Decodes unpadded base64url text. Returns nil for `=` padding, characters outside the
    /// base64url alphabet (including `+`, `/`, whitespace), an impossible length, or
    /// non-zero trailing bits (so each byte string has exactly one accepted encoding).
    public static func decode(_ text: String) -> [UInt8]? {
        decodeUnpadded(Array(text.utf8)[...], plus: 0x2D, slash: 0x5F)
    }

    /// `decode(_:)` for raw ASCII bytes.
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        decodeUnpadded(Array(bytes)[...], plus: 0x2D, slash: 0x5F)
    }
}

/// Standard base64 (RFC 4648 §4) with `+` and `/`.
public enum Base64 {
    /// The base64 text of `bytes`, padded with `=` to a multiple of 4 unless `padded` is false
    /// (the PHC string format uses unpadded base64).
    public static func encode(_ bytes: some Collection<UInt8>, padded: Bool = true) -> String {
        SuplashCrypto.encode(bytes, alphabet: standardAlphabet, pad: padded)
    }

    /// Decodes base64 text, padded (length a multiple of 4, 0–2 `=` at the end) or unpadded.
    /// Returns nil for characters outside the alphabet (including whitespace), misplaced or
    /// excess `=`, an impossible length, or non-zero trailing bits.
    public static func decode(_ text: String) -> [UInt8]? {
        var chars = Array(text.utf8)[...]
        if chars.last == 0x3D {
            guard chars.count % 4 == 0 else { return nil }
            chars = chars.dropLast()
            if chars.last == 0x3D { chars = chars.dropLast() }
            // After removing padding, the unpadded length must be ≡ 2 or 3 (mod 4).
            guard chars.count % 4 >= 2 else { return nil }
        }
        return decodeUnpadded(chars, plus: 0x2B, slash: 0x2F)
    }
}
