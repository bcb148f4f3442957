/// Canonical UUID text handling (RFC 9562): ids and `healthKitUUID` are accepted in
/// either case and stored and returned in lower case (spec §1).
public enum UUIDText {
    /// The lower-case canonical form of `text` (`8-4-4-4-12` hex digits), or nil when
    /// `text` is not a canonical UUID string.
    public static func normalized(_ text: String) -> String? {
        guard text.utf8.count == 36 else { return nil }
        // 0: not a UUID; 1: canonical lower case already (answered without a copy); 2: upper-case digits.
        let shape =
            text.utf8.withContiguousStorageIfAvailable(Self.shape) ?? Array(text.utf8).withUnsafeBufferPointer(Self.shape)
        switch shape {
        case 1: return text
        case 2: return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self)
        default: return nil
        }
    }

    /// 0 when `b` is not `8-4-4-4-12` hex digits, 2 when it has upper-case ones, else 1.
    private static func shape(_ b: UnsafeBufferPointer<UInt8>) -> Int {
        var upper = false
        for i in 0..<b.count {
            let c = b[i]
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == 0x2D else { return 0 }
                continue
            }
            switch c {
            case 0x30...0x39, 0x61...0x66: continue
            case 0x41...0x46: upper = true
            default: return 0
            }
        }
        return upper ? 2 : 1
    }

    /// A UUIDv7 (RFC 9562 §5.7) from a Unix time in milliseconds and 10 random bytes
    /// (the caller supplies randomness from a CSPRNG; the domain does no I/O).
    public static func version7(unixMillis: Int64, random: [UInt8]) -> String {
        precondition(random.count >= 10, "UUIDv7 needs 10 random bytes")
        var bytes = [UInt8](repeating: 0, count: 16)
        let ms = UInt64(max(0, unixMillis))
        for k in 0..<6 { bytes[k] = UInt8(truncatingIfNeeded: ms >> (8 * (5 - k))) }
        for k in 0..<10 { bytes[6 + k] = random[k] }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(0x2D) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
