import COpenSSL
import Foundation
import SuplashCrypto
import SuplashJSON

/// A freshly generated 2048-bit RSA key (OpenSSL 3) that signs RS256 tokens the way Apple's
/// identity service does, for tests only.
final class TestRSAKey: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent signing with one EVP_PKEY. Tests sign
    // from one thread anyway.
    private let key: OpaquePointer
    let kid: String

    init(kid: String) throws {
        self.kid = kid
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw TestFailure("EVP_PKEY_CTX") }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) == 1,
            EVP_PKEY_generate(context, &generated) == 1, let generated
        else { throw TestFailure("RSA keygen") }
        key = generated
    }

    deinit { EVP_PKEY_free(key) }

    private func parameter(_ name: String) -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &bn) == 1, let bn else { return [] }
        defer { BN_free(bn) }
        var out = [UInt8](repeating: 0, count: (Int(BN_num_bits(bn)) + 7) / 8)
        _ = out.withUnsafeMutableBufferPointer { BN_bn2bin(bn, $0.baseAddress) }
        return out
    }

    /// The public key as a JWK (RFC 7517) with `kid`, `use: sig`, `alg: RS256`.
    var jwk: JSONValue {
        .object([
            ("kty", "RSA"), ("kid", .string(kid)), ("use", "sig"), ("alg", "RS256"),
            ("n", .string(Base64URL.encode(parameter("n")))), ("e", .string(Base64URL.encode(parameter("e")))),
        ])
    }

    var publicKey: RSAPublicKey? { RSAPublicKey(modulus: parameter("n"), exponent: parameter("e")) }

    /// RSASSA-PKCS1-v1_5 SHA-256 signature of `message`.
    func sign(_ message: [UInt8]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { return [] }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { return [] }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return [] }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { return [] }
        return Array(signature.prefix(length))
    }

    /// A compact RS256 JWS of `claims` with header `{"kid": headerKid ?? kid, "alg": "RS256"}`.
    func token(_ claims: JSONValue, headerKid: String? = nil) -> String {
        let header: JSONValue = .object([("kid", .string(headerKid ?? kid)), ("alg", "RS256")])
        let input = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        return input + "." + Base64URL.encode(sign(Array(input.utf8)))
    }

    /// Writes `{"keys": [jwk…]}` of `keys` to `path`.
    static func writeJWKS(_ keys: [TestRSAKey], to path: String) throws {
        let document: JSONValue = .object([("keys", .array(keys.map(\.jwk)))])
        try Data(document.serialized()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
