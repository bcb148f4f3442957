import COpenSSL
import SuplashJSON

/// Why an ES256 key could not be used. Descriptions are fixed strings (never key material).
public enum ES256Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a PEM private key OpenSSL can read (PKCS#8 `BEGIN PRIVATE KEY`, or
    /// SEC 1 `BEGIN EC PRIVATE KEY`), or the key is encrypted.
    case unreadableKey
    /// The key is not an elliptic-curve key on P-256 (`prime256v1`, RFC 7518 §3.4).
    case notP256
    /// The public point is not 32-byte `x` and `y` coordinates of a point on P-256.
    case invalidPublicKey
    /// OpenSSL failed to produce a signature.
    case signingFailed

    /// A fixed, content-free description.
    public var description: String {
        switch self {
        case .unreadableKey: return "ES256 key is not a readable PEM private key"
        case .notP256: return "ES256 key is not an EC key on P-256"
        case .invalidPublicKey: return "ES256 public key is not a point on P-256"
        case .signingFailed: return "ES256 signing failed"
        }
    }
}

/// Byte length of a P-256 coordinate and of each half of a JOSE ECDSA signature.
private let coordinateLength = 32

/// A P-256 private key that signs with ECDSA over SHA-256 — JWS `ES256` (RFC 7518 §3.4) —
/// through OpenSSL's EVP interface (`EVP_DigestSign`). Apple's `.p8` keys (APNs provider
/// tokens, Sign in with Apple client secrets) are PKCS#8 PEM P-256 keys.
///
/// `@unchecked Sendable`: it owns one `EVP_PKEY` that is never changed after loading; OpenSSL 3
/// allows one key to be used by several threads at once for signing, and every signature uses
/// its own `EVP_MD_CTX`. The key is freed in `deinit`.
public final class ES256PrivateKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The matching public key.
    public let publicKey: ES256PublicKey

    /// Loads a PEM private key (PKCS#8 `-----BEGIN PRIVATE KEY-----` as in Apple's `.p8`
    /// files, or SEC 1 `-----BEGIN EC PRIVATE KEY-----`).
    /// - Throws: `ES256Error.unreadableKey`, `.notP256`.
    public init(pem: some Collection<UInt8>) throws(ES256Error) {
        let bytes = Array(pem)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, let bio = BIO_new_mem_buf(base, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else {
            ERR_clear_error()
            throw .unreadableKey
        }
        guard let point = ES256PrivateKey.p256PublicPoint(loaded), let publicKey = ES256PublicKey(uncompressedPoint: point) else {
            EVP_PKEY_free(loaded)
            ERR_clear_error()
            throw .notP256
        }
        key = loaded
        self.publicKey = publicKey
    }

    /// `init(pem:)` for PEM text.
    public convenience init(pem: String) throws(ES256Error) {
        try self.init(pem: Array(pem.utf8))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The uncompressed public point (`0x04 ‖ x ‖ y`, 65 bytes) of an EC key on P-256, or nil.
    private static func p256PublicPoint(_ key: OpaquePointer) -> [UInt8]? {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var nameLength = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &nameLength) == 1 else {
            return nil
        }
        let group = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard group == "prime256v1" || group == "P-256" else { return nil }
        // Uncompressed point form, whatever form the file stored.
        _ = EVP_PKEY_set_utf8_string_param(
            key, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
            OSSL_PKEY_EC_POINT_CONVERSION_FORMAT_UNCOMPRESSED)
        var point = [UInt8](repeating: 0, count: 65)
        var pointLength = 0
        guard EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, &point, point.count, &pointLength) == 1,
            pointLength == 65
        else { return nil }
        return point
    }

    /// Signs `message` with ECDSA P-256 / SHA-256 and returns the JOSE form of the signature:
    /// `R ‖ S`, each left-padded to 32 bytes (RFC 7518 §3.4). OpenSSL produces the DER
    /// `ECDSA-Sig-Value`; it is decoded with `d2i_ECDSA_SIG` and its integers written with
    /// `BN_bn2binpad`.
    /// - Returns: 64 bytes.
    /// - Throws: `ES256Error.signingFailed`.
    public func sign(_ message: some Collection<UInt8>) throws(ES256Error) -> [UInt8] {
        let input = Array(message)
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw .signingFailed }
        var empty: UInt8 = 0
        var derLength = 0
        var der: [UInt8] = []
        let signed: Bool = input.withUnsafeBufferPointer { msg in
            withUnsafeMutablePointer(to: &empty) { emptyPointer in
                let base = msg.baseAddress ?? UnsafePointer(emptyPointer)
                guard EVP_DigestSign(context, nil, &derLength, base, msg.count) == 1, derLength > 0 else { return false }
                der = [UInt8](repeating: 0, count: derLength)
                return der.withUnsafeMutableBufferPointer { out in
                    EVP_DigestSign(context, out.baseAddress, &derLength, base, msg.count) == 1
                }
            }
        }
        guard signed, let raw = ES256Signature.raw(fromDER: der.prefix(derLength)) else { throw .signingFailed }
        return raw
    }
}

/// A P-256 public key that verifies JWS `ES256` signatures (RFC 7518 §3.4) through
/// `EVP_DigestVerify`. Holds only the point's bytes (so it is `Sendable`); the OpenSSL key is
/// built for each verification.
public struct ES256PublicKey: Sendable, Hashable {
    /// The uncompressed point `0x04 ‖ x ‖ y` (SEC 1 §2.3.3), 65 bytes.
    public let uncompressedPoint: [UInt8]

    /// A key from a 65-byte uncompressed point; nil when it is not a point on P-256.
    public init?(uncompressedPoint: [UInt8]) {
        guard uncompressedPoint.count == 65, uncompressedPoint.first == 0x04 else { return nil }
        self.uncompressedPoint = uncompressedPoint
        guard let key = makeKey() else { return nil }
        EVP_PKEY_free(key)
    }

    /// A key from the base64url `x` and `y` members of an EC JWK with `crv` `P-256`
    /// (RFC 7518 §6.2.1): each exactly 32 bytes.
    public init?(jwkX x: String, y: String) {
        guard let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y),
            xBytes.count == coordinateLength, yBytes.count == coordinateLength
        else { return nil }
        self.init(uncompressedPoint: [0x04] + xBytes + yBytes)
    }

    /// The JWK `x` coordinate, base64url.
    public var jwkX: String { Base64URL.encode(uncompressedPoint[1...32]) }
    /// The JWK `y` coordinate, base64url.
    public var jwkY: String { Base64URL.encode(uncompressedPoint[33...64]) }

    /// True when `signature` (JOSE form: 64 bytes `R ‖ S`) is a valid ECDSA P-256 / SHA-256
    /// signature of `message`. The raw form is turned into DER with `ECDSA_SIG_set0` +
    /// `i2d_ECDSA_SIG` for OpenSSL; any other length is refused.
    public func verify(signature: [UInt8], message: some Collection<UInt8>) -> Bool {
        guard let der = ES256Signature.der(fromRaw: signature), let key = makeKey() else { return false }
        defer {
            EVP_PKEY_free(key)
            ERR_clear_error()
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        let input = Array(message)
        var empty: UInt8 = 0
        return der.withUnsafeBufferPointer { sig in
            input.withUnsafeBufferPointer { msg in
                withUnsafeMutablePointer(to: &empty) { emptyPointer in
                    EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress ?? UnsafePointer(emptyPointer), msg.count)
                }
            }
        } == 1
    }

    /// A new `EVP_PKEY` (caller frees) for the point, or nil when OpenSSL refuses it
    /// (not on the curve).
    private func makeKey() -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard let groupName = staticCString("group"), let groupValue = staticCString("prime256v1"),
            let pubName = staticCString("pub")
        else { return nil }
        let params: UnsafeMutablePointer<OSSL_PARAM>? = uncompressedPoint.withUnsafeBytes { raw in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, groupName, groupValue, 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, pubName, raw.baseAddress, raw.count) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params else {
            ERR_clear_error()
            return nil
        }
        defer { OSSL_PARAM_free(params) }
        return publicKeyFromParameters(algorithm: "EC", params)
    }
}

/// Conversions between OpenSSL's DER `ECDSA-Sig-Value` (SEC 1 §C.5) and the fixed-length
/// `R ‖ S` that JWS requires (RFC 7518 §3.4), for P-256 (32-byte halves). Both directions use
/// OpenSSL's `ECDSA_SIG` and `BIGNUM` functions; no DER is written by hand.
public enum ES256Signature {
    /// `R ‖ S` (64 bytes) from a DER signature (`d2i_ECDSA_SIG`, `ECDSA_SIG_get0`,
    /// `BN_bn2binpad`); nil when it does not parse, has trailing bytes, or an integer does
    /// not fit 32 bytes.
    public static func raw(fromDER der: some Collection<UInt8>) -> [UInt8]? {
        let bytes = Array(der)
        guard !bytes.isEmpty else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            defer { ECDSA_SIG_free(signature) }
            guard let base = buffer.baseAddress, cursor == base + buffer.count else { return nil }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            guard let r, let s else { return nil }
            var out = [UInt8](repeating: 0, count: 2 * coordinateLength)
            let written = out.withUnsafeMutableBufferPointer { o -> Bool in
                guard let p = o.baseAddress else { return false }
                return BN_bn2binpad(r, p, Int32(coordinateLength)) == Int32(coordinateLength)
                    && BN_bn2binpad(s, p + coordinateLength, Int32(coordinateLength)) == Int32(coordinateLength)
            }
            return written ? out : nil
        }
    }

    /// A DER signature from `R ‖ S` (`BN_bin2bn`, `ECDSA_SIG_set0`, `i2d_ECDSA_SIG`); nil
    /// unless `raw` is exactly 64 bytes.
    public static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * coordinateLength else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { b in
            (
                BN_bin2bn(b.baseAddress, Int32(coordinateLength), nil),
                BN_bin2bn(b.baseAddress.map { $0 + coordinateLength }, Int32(coordinateLength), nil)
            )
        }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { o -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = o.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? out : nil
    }
}

extension JWT {
    /// Signs `claims` as a compact JWS with `ES256` (RFC 7515 §7.1, RFC 7518 §3.4): the header is
    /// `{"alg":"ES256","kid":"<keyID>"}` (the form Apple asks for in APNs provider tokens and
    /// Sign in with Apple client secrets), claims are serialised compactly in member order, and
    /// the signature is the 64-byte `R ‖ S`.
    /// - Returns: `base64url(header) "." base64url(claims) "." base64url(R ‖ S)`.
    /// - Throws: `ES256Error.signingFailed`.
    public static func signES256(claims: JSONValue, keyID: String, key: ES256PrivateKey) throws(ES256Error) -> String {
        let header: JSONValue = .object([("alg", "ES256"), ("kid", .string(keyID))])
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Verifies an ES256 token and returns its claims object, with the same checks and order as
    /// `verifyRS256` (header `alg` exactly `ES256`, `kid` names a key of `keys`, signature
    /// before claims, `exp` required, `nbf`/`iat` not in the future). Times are Unix seconds.
    /// - Throws: `JWTError`.
    public static func verifyES256(
        _ token: String, keys: [String: ES256PublicKey], now: Int64,
        leewaySeconds: Int64 = 60
    ) throws(JWTError) -> JSONValue {
        try verify(token, algorithm: "ES256", key: { keys[$0] }, now: now, leewaySeconds: leewaySeconds) {
            key, signature, signingInput in
            key.verify(signature: signature, message: signingInput)
        }
    }
}
