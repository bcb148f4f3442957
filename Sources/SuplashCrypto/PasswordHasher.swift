import CArgon2

/// Argon2id cost parameters (RFC 9106). The defaults are one of the five configurations the
/// OWASP Password Storage Cheat Sheet lists as giving an equal level of defence (46 MiB × 1
/// pass, 19 × 2, 12 × 3, 9 × 4, 7 × 5): 12 MiB of memory, 3 passes, 1 lane — about the CPU
/// of 19 MiB × 2 with ⅗ of the memory per hash in flight — a 16-byte salt and a 32-byte hash.
public struct Argon2idParameters: Sendable, Hashable {
    /// Memory cost in KiB (`m` in the PHC string). Must be ≥ 8 × `parallelism`.
    public var memoryKiB: UInt32
    /// Number of passes over memory (`t` in the PHC string), ≥ 1.
    public var iterations: UInt32
    /// Number of lanes (`p` in the PHC string), ≥ 1.
    public var parallelism: UInt32
    /// Salt length in bytes (≥ 8; fresh from `SecureRandom` for every hash).
    public var saltLength: Int
    /// Hash (tag) length in bytes (≥ 4).
    public var hashLength: Int

    /// Creates parameters; see the property docs for units and bounds.
    public init(
        memoryKiB: UInt32 = 12_288, iterations: UInt32 = 3, parallelism: UInt32 = 1,
        saltLength: Int = 16, hashLength: Int = 32
    ) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
        self.saltLength = saltLength
        self.hashLength = hashLength
    }

    /// m=12288 KiB, t=3, p=1, 16-byte salt, 32-byte hash (OWASP Password Storage Cheat Sheet).
    public static let `default` = Argon2idParameters()
}

/// Why `PasswordHasher.hash` failed: libargon2 rejected the parameters or could not allocate
/// memory. `code` is the `argon2_error_codes` value; the description never includes the password.
public struct PasswordHashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libargon2's error code (negative `ARGON2_*` constant).
    public let code: Int32
    /// Creates an error for a libargon2 code.
    public init(code: Int32) { self.code = code }
    /// `"argon2id failed: <libargon2 message>"`.
    public var description: String {
        "argon2id failed: " + String(cString: argon2_error_message(code))
    }
}

/// Password hashing with Argon2id (libargon2), stored as PHC strings:
/// `$argon2id$v=19$m=12288,t=3,p=1$<salt b64>$<hash b64>` (unpadded standard base64).
///
/// Passwords are hashed as their UTF-8 bytes; Unicode NFKC normalisation happens in the
/// domain layer before calling in. Every call costs `memoryKiB` of memory and tens of
/// milliseconds of CPU: run it on the worker pool, never on an event loop.
public enum PasswordHasher {
    /// Hashes `password` with a fresh random salt.
    ///
    /// - Returns: the PHC string (ASCII).
    /// - Throws: `PasswordHashError` when libargon2 rejects the parameters (e.g. memory below
    ///   8 × parallelism, salt shorter than 8 bytes) or cannot allocate the memory.
    public static func hash(_ password: String, parameters: Argon2idParameters = .default) throws -> String {
        guard parameters.saltLength >= 0, parameters.hashLength >= 0 else {
            throw PasswordHashError(code: ARGON2_SALT_TOO_SHORT.rawValue)
        }
        let salt = SecureRandom.bytes(parameters.saltLength)
        let encodedLength = argon2_encodedlen(
            parameters.iterations, parameters.memoryKiB, parameters.parallelism,
            UInt32(parameters.saltLength), UInt32(parameters.hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: encodedLength + 1)
        let password = Array(password.utf8)
        let rc = password.withUnsafeBytes { pwd in
            salt.withUnsafeBytes { saltBytes in
                encoded.withUnsafeMutableBufferPointer { out in
                    argon2id_hash_encoded(
                        parameters.iterations, parameters.memoryKiB, parameters.parallelism,
                        pwd.baseAddress, pwd.count,
                        saltBytes.baseAddress, saltBytes.count,
                        parameters.hashLength, out.baseAddress, out.count)
                }
            }
        }
        guard rc == ARGON2_OK.rawValue else { throw PasswordHashError(code: rc) }
        let end = encoded.firstIndex(of: 0) ?? encoded.count
        return String(decoding: encoded[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when `password` matches the Argon2id PHC string `phc` (compared in constant time
    /// by libargon2). False for a wrong password and for anything malformed: not Argon2id,
    /// bad base64, missing fields, parameters libargon2 rejects, or absurd costs (memory above
    /// 4 GiB or more than 64 passes are refused without hashing, so a tampered row cannot
    /// exhaust the server).
    public static func verify(_ password: String, phc: String) -> Bool {
        guard let parsed = PHCString(phc), parsed.memoryKiB <= 4 * 1024 * 1024, parsed.iterations <= 64,
            parsed.parallelism <= 64
        else { return false }
        let password = Array(password.utf8)
        return phc.withCString { encoded in
            password.withUnsafeBytes { pwd in
                argon2id_verify(encoded, pwd.baseAddress, pwd.count) == ARGON2_OK.rawValue
            }
        }
    }

    /// A well-formed PHC string with `parameters`, a random salt and a random tag, made
    /// without hashing (no memory, no time). `verify` against it does the full Argon2id
    /// work of those parameters and fails (the tag is 256 random bits, not the hash of any
    /// password anyone knows): a decoy for the unknown-account path, so it costs what a
    /// wrong password costs without the server hashing a throw-away password at start-up.
    public static func decoyPHC(parameters: Argon2idParameters = .default) -> String {
        let salt = SecureRandom.bytes(max(parameters.saltLength, 8))
        let tag = SecureRandom.bytes(max(parameters.hashLength, 4))
        return "$argon2id$v=19$m=\(parameters.memoryKiB),t=\(parameters.iterations),p=\(parameters.parallelism)$"
            + Base64.encode(salt, padded: false) + "$" + Base64.encode(tag, padded: false)
    }

    /// Throws the `PasswordHashError` that `hash` would throw for `parameters`, at almost no
    /// cost: memory below 8 KiB per lane is refused here, and everything else is checked by
    /// libargon2 in a run of the same shape with the minimum memory and at most one pass.
    public static func validate(_ parameters: Argon2idParameters) throws {
        guard parameters.saltLength >= 0, parameters.hashLength >= 0 else {
            throw PasswordHashError(code: ARGON2_SALT_TOO_SHORT.rawValue)
        }
        guard UInt64(parameters.memoryKiB) >= 8 * UInt64(parameters.parallelism) else {
            throw PasswordHashError(code: ARGON2_MEMORY_TOO_LITTLE.rawValue)
        }
        let salt = [UInt8](repeating: 0x5A, count: parameters.saltLength)
        var out = [UInt8](repeating: 0, count: parameters.hashLength)
        let rc = salt.withUnsafeBytes { saltBytes in
            out.withUnsafeMutableBytes { hash in
                argon2id_hash_raw(
                    min(parameters.iterations, 1), max(8, 8 * parameters.parallelism), parameters.parallelism,
                    saltBytes.baseAddress, 0, saltBytes.baseAddress, saltBytes.count,
                    hash.baseAddress, hash.count)
            }
        }
        guard rc == ARGON2_OK.rawValue else { throw PasswordHashError(code: rc) }
    }

    /// Does the same Argon2id work as `verify` against a hash with `parameters`, then returns
    /// false. Call it when the account does not exist, so that "unknown email" costs the same
    /// time as "wrong password" and the response timing does not reveal which accounts exist.
    @discardableResult
    public static func dummyVerify(_ password: String, parameters: Argon2idParameters = .default) -> Bool {
        let salt = [UInt8](repeating: 0x5A, count: max(parameters.saltLength, 8))
        var out = [UInt8](repeating: 0, count: max(parameters.hashLength, 4))
        let password = Array(password.utf8)
        let rc = password.withUnsafeBytes { pwd in
            salt.withUnsafeBytes { saltBytes in
                out.withUnsafeMutableBytes { hash in
                    argon2id_hash_raw(
                        parameters.iterations, parameters.memoryKiB, parameters.parallelism,
                        pwd.baseAddress, pwd.count, saltBytes.baseAddress, saltBytes.count,
                        hash.baseAddress, hash.count)
                }
            }
        }
        // Compare like verify does, against a value that cannot match.
        _ = constantTimeEquals(out, [UInt8](repeating: 0, count: out.count + (rc == ARGON2_OK.rawValue ? 1 : 0)))
        return false
    }

    /// True when `phc` should be re-hashed at the next successful login: it is not a
    /// well-formed Argon2id v=19 PHC string, or its memory, iterations, parallelism, salt
    /// length or hash length differ from `parameters`.
    public static func needsRehash(phc: String, parameters: Argon2idParameters = .default) -> Bool {
        guard let parsed = PHCString(phc) else { return true }
        return parsed.version != 19
            || parsed.memoryKiB != parameters.memoryKiB
            || parsed.iterations != parameters.iterations
            || parsed.parallelism != parameters.parallelism
            || parsed.saltLength != parameters.saltLength
            || parsed.hashLength != parameters.hashLength
    }
}

/// The fields of `$argon2id$v=19$m=M,t=T,p=P$salt$hash` (parsed strictly; used for
/// `needsRehash` and to bound costs before `verify`).
struct PHCString {
    var version: UInt32
    var memoryKiB: UInt32
    var iterations: UInt32
    var parallelism: UInt32
    var saltLength: Int
    var hashLength: Int

    init?(_ phc: String) {
        let parts = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[1] == "argon2id", parts[2].hasPrefix("v=") else { return nil }
        guard let version = PHCString.number(parts[2].dropFirst(2)) else { return nil }
        let params = parts[3].split(separator: ",", omittingEmptySubsequences: false)
        guard params.count == 3, params[0].hasPrefix("m="), params[1].hasPrefix("t="), params[2].hasPrefix("p="),
            let m = PHCString.number(params[0].dropFirst(2)),
            let t = PHCString.number(params[1].dropFirst(2)),
            let p = PHCString.number(params[2].dropFirst(2)),
            let salt = Base64.decode(String(parts[4])), !parts[4].contains("="),
            let hash = Base64.decode(String(parts[5])), !parts[5].contains("=")
        else { return nil }
        self.version = version
        self.memoryKiB = m
        self.iterations = t
        self.parallelism = p
        self.saltLength = salt.count
        self.hashLength = hash.count
    }

    /// A decimal without sign or leading zeros that fits `UInt32`.
    private static func number(_ s: Substring) -> UInt32? {
        guard !s.isEmpty, s.count <= 10, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            s == "0" || s.first != "0"
        else { return nil }
        return UInt32(s)
    }
}
