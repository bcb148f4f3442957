import COpenSSL
import SuplashJSON

/// An RSA public key (modulus and public exponent, big-endian unsigned bytes) that verifies
/// RSASSA-PKCS1-v1_5 with SHA-256 signatures (RFC 8017 §8.2; JWS `RS256`, RFC 7518 §3.3)
/// through OpenSSL 3: the key is built with `OSSL_PARAM_BLD` + `EVP_PKEY_fromdata`, and
/// checked with `EVP_DigestVerify`.
///
/// The value holds only bytes (so it is `Sendable`); the OpenSSL key object is built for
/// each verification and freed right after.
public struct RSAPublicKey: Sendable, Hashable {
    /// The modulus `n`, big-endian, without leading zero bytes.
    public let modulus: [UInt8]
    /// The public exponent `e`, big-endian, without leading zero bytes.
    public let exponent: [UInt8]

    /// Smallest accepted modulus, bits (RFC 7518 §3.3: 2048 or larger).
    public static let minimumBits = 2048
    /// Largest accepted modulus, bits.
    public static let maximumBits = 8192

    /// A key from raw big-endian `n` and `e`; nil when the modulus is outside 2048–8192 bits,
    /// the exponent is even, below 3 or longer than 8 bytes, or OpenSSL refuses the key.
    public init?(modulus: [UInt8], exponent: [UInt8]) {
        let n = Array(modulus.drop(while: { $0 == 0 }))
        let e = Array(exponent.drop(while: { $0 == 0 }))
        guard let top = n.first else { return nil }
        let bits = n.count * 8 - top.leadingZeroBitCount
        guard bits >= Self.minimumBits, bits <= Self.maximumBits else { return nil }
        guard let last = e.last, e.count <= 8, last & 1 == 1, e.count > 1 || last >= 3 else { return nil }
        self.modulus = n
        self.exponent = e
        guard let key = makeKey() else { return nil }
        EVP_PKEY_free(key)
    }

    /// A key from the base64url `n` and `e` members of an RSA JWK (RFC 7518 §6.3.1).
    public init?(jwkModulus n: String, exponent e: String) {
        guard let nBytes = Base64URL.decode(n), let eBytes = Base64URL.decode(e) else { return nil }
        self.init(modulus: nBytes, exponent: eBytes)
    }

    /// Modulus length in bytes (the length every signature must have).
    public var modulusLength: Int { modulus.count }

    /// True when `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of `message`.
    /// A signature whose length is not the modulus length is refused without calling OpenSSL.
    public func verifyPKCS1SHA256(signature: [UInt8], message: some Collection<UInt8>) -> Bool {
        guard signature.count == modulusLength, let key = makeKey() else { return false }
        defer {
            EVP_PKEY_free(key)
            ERR_clear_error()
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        let input = Array(message)
        var empty: UInt8 = 0
        let result = signature.withUnsafeBufferPointer { sig in
            input.withUnsafeBufferPointer { msg in
                withUnsafeMutablePointer(to: &empty) { emptyPointer in
                    EVP_DigestVerify(
                        context, sig.baseAddress, sig.count,
                        msg.baseAddress ?? UnsafePointer(emptyPointer), msg.count)
                }
            }
        }
        return result == 1
    }

    /// A new `EVP_PKEY` (caller frees) from `n` and `e`, or nil.
    private func makeKey() -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        let n = modulus.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let e = exponent.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        defer {
            BN_free(n)
            BN_free(e)
        }
        // The builder keeps the parameter-name pointers until `to_param`, so they must be
        // static C strings (a Swift String argument is a temporary).
        guard let n, let e, let nName = staticCString("n"), let eName = staticCString("e"),
            OSSL_PARAM_BLD_push_BN(builder, nName, n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, eName, e) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else {
            ERR_clear_error()
            return nil
        }
        defer { OSSL_PARAM_free(params) }
        return publicKeyFromParameters(algorithm: "RSA", params)
    }
}

/// JSON Web Key Sets (RFC 7517 §5) holding RSA signing keys, such as Apple's
/// `https://appleid.apple.com/auth/keys`.
public enum JWKS {
    /// The RS256-capable keys of a JWKS document, by `kid`: members with `kty` `RSA`, a string
    /// `kid`, `n` and `e`, `use` absent or `sig`, `alg` absent or `RS256`. Others are skipped.
    /// - Returns: nil when `document` is not JSON of the shape `{"keys": [...]}`.
    public static func rsaKeys(from document: some Collection<UInt8>) -> [String: RSAPublicKey]? {
        guard let root = try? JSONParser.parse(document, maxDepth: 8),
            case .array(let entries)? = root["keys"]
        else { return nil }
        var out: [String: RSAPublicKey] = [:]
        for entry in entries {
            guard entry["kty"]?.stringValue == "RSA", let kid = entry["kid"]?.stringValue,
                let n = entry["n"]?.stringValue, let e = entry["e"]?.stringValue
            else { continue }
            if let use = entry["use"], use.stringValue != "sig" { continue }
            if let alg = entry["alg"], alg.stringValue != "RS256" { continue }
            if let key = RSAPublicKey(jwkModulus: n, exponent: e) { out[kid] = key }
        }
        return out
    }
}
