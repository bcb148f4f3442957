import SuplashJSON
import XCTest

@testable import SuplashCrypto

/// ES256 (RFC 7518 §3.4): the RFC 7515 Appendix A.3 vector, DER ↔ R‖S conversion, PEM loading,
/// sign-then-verify, and the ES256 JWT builder.
final class ES256Tests: XCTestCase {
    /// RFC 7515 A.3.1: the P-256 public key as a JWK.
    static let x = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
    /// RFC 7515 A.3.1: the complete JWS (header `{"alg":"ES256"}`).
    static let token =
        "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"

    /// A test-only P-256 key (PKCS#8, the `.p8` layout) and its public coordinates.
    static let testKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5K94E6L+qgPkE9kQ
        o1bCFv98KNXK2ujBmmTszoQXvoWhRANCAARV9tSlq395rpTd5pmyREXjmTkKmE72
        Ely7H8mCkMtdeNxDh96N3Fbm8/Qy4QOMxO80NTGOJiSLMlp06b0a96ex
        -----END PRIVATE KEY-----
        """
    static let testKeyX = "VfbUpat_ea6U3eaZskRF45k5CphO9hJcux_JgpDLXXg"
    static let testKeyY = "3EOH3o3cVubz9DLhA4zE7zQ1MY4mJIsyWnTpvRr3p7E"
    /// The same key in SEC 1 form (`BEGIN EC PRIVATE KEY`).
    static let testKeySEC1PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIOSveBOi/qoD5BPZEKNWwhb/fCjVytrowZpk7M6EF76FoAoGCCqGSM49
        AwEHoUQDQgAEVfbUpat/ea6U3eaZskRF45k5CphO9hJcux/JgpDLXXjcQ4fejdxW
        5vP0MuEDjMTvNDUxjiYkizJadOm9GvensQ==
        -----END EC PRIVATE KEY-----
        """
    /// A P-384 key: readable, but not ES256.
    static let p384PEM = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDBxGswz/iuKUjOJPCVa
        bFDSEijXm8AjgwFj2jsEeip9JfmKgFs4R58dNEQdpA+wRvehZANiAATN9/XTNEDs
        Ms1v2x/gXR7xgdId6sJQmqT6Q056WgzKS0REy1xetd42TNT40usW9ioBAd1fErmT
        3SsY5Hur0Iz/fCLoNrLYa0ihE7Styde0/QBQREQXoLE0QUG6/E1xVz8=
        -----END PRIVATE KEY-----
        """

    func parts(_ token: String) throws -> (input: [UInt8], signature: [UInt8]) {
        let segments = token.split(separator: ".")
        XCTAssertEqual(segments.count, 3)
        return (Array((segments[0] + "." + segments[1]).utf8), try XCTUnwrap(Base64URL.decode(String(segments[2]))))
    }

    func testRFC7515A3SignatureVerifiesWithItsJWK() throws {
        let key = try XCTUnwrap(ES256PublicKey(jwkX: Self.x, y: Self.y))
        let (input, signature) = try parts(Self.token)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.verify(signature: signature, message: input))
        XCTAssertEqual(key.jwkX, Self.x)
        XCTAssertEqual(key.jwkY, Self.y)
        // Through the JWT verifier: the RFC token has no `kid`, so it names no key of a key set.
        XCTAssertThrowsError(try JWT.verifyES256(Self.token, keys: ["k": key], now: 1_300_819_000)) {
            XCTAssertEqual($0 as? JWTError, .unknownKey)
        }
    }

    func testTamperedVectorFails() throws {
        let key = try XCTUnwrap(ES256PublicKey(jwkX: Self.x, y: Self.y))
        let (input, signature) = try parts(Self.token)
        var otherInput = input
        otherInput[5] ^= 0x01
        XCTAssertFalse(key.verify(signature: signature, message: otherInput))
        for index in [0, 31, 32, 63] {
            var other = signature
            other[index] ^= 0x01
            XCTAssertFalse(key.verify(signature: other, message: input), "flipped byte \(index)")
        }
        XCTAssertFalse(key.verify(signature: Array(signature.dropLast()), message: input), "63 bytes")
        XCTAssertFalse(key.verify(signature: signature + [0], message: input), "65 bytes")
        XCTAssertFalse(key.verify(signature: [UInt8](repeating: 0, count: 64), message: input), "r = s = 0")
        // The DER form is not accepted where JOSE's raw form is required.
        let der = try XCTUnwrap(ES256Signature.der(fromRaw: signature))
        XCTAssertFalse(key.verify(signature: der, message: input))
    }

    func testDERAndRawConvertBothWays() throws {
        let (_, signature) = try parts(Self.token)
        let der = try XCTUnwrap(ES256Signature.der(fromRaw: signature))
        XCTAssertEqual(der.first, 0x30, "a DER SEQUENCE")
        XCTAssertEqual(ES256Signature.raw(fromDER: der), signature)
        // Small integers are left-padded back to 32 bytes each.
        var small = [UInt8](repeating: 0, count: 64)
        small[31] = 7
        small[63] = 9
        let smallDER = try XCTUnwrap(ES256Signature.der(fromRaw: small))
        XCTAssertLessThan(smallDER.count, 16)
        XCTAssertEqual(ES256Signature.raw(fromDER: smallDER), small)
        // Trailing bytes, truncation, garbage and the wrong raw length are refused.
        XCTAssertNil(ES256Signature.raw(fromDER: der + [0]))
        XCTAssertNil(ES256Signature.raw(fromDER: der.dropLast()))
        XCTAssertNil(ES256Signature.raw(fromDER: [0x01, 0x02]))
        XCTAssertNil(ES256Signature.raw(fromDER: []))
        XCTAssertNil(ES256Signature.der(fromRaw: Array(signature.prefix(63))))
    }

    func testPKCS8KeyLoadsAndSignThenVerify() throws {
        let key = try ES256PrivateKey(pem: Self.testKeyPEM)
        XCTAssertEqual(key.publicKey.jwkX, Self.testKeyX)
        XCTAssertEqual(key.publicKey.jwkY, Self.testKeyY)
        let message = Array("header.claims".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.publicKey.verify(signature: signature, message: message))
        XCTAssertFalse(key.publicKey.verify(signature: signature, message: Array("header.claimz".utf8)))
        // ECDSA is randomised: a second signature differs and verifies too.
        let again = try key.sign(message)
        XCTAssertNotEqual(again, signature)
        XCTAssertTrue(key.publicKey.verify(signature: again, message: message))
        // Another key does not verify it.
        let rfcKey = try XCTUnwrap(ES256PublicKey(jwkX: Self.x, y: Self.y))
        XCTAssertFalse(rfcKey.verify(signature: signature, message: message))
        // The SEC 1 form of the same key gives the same public key.
        XCTAssertEqual(try ES256PrivateKey(pem: Self.testKeySEC1PEM).publicKey, key.publicKey)
    }

    func testUnusableKeysAreRefused() {
        XCTAssertThrowsError(try ES256PrivateKey(pem: Self.p384PEM)) { XCTAssertEqual($0 as? ES256Error, .notP256) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: "not a key")) { XCTAssertEqual($0 as? ES256Error, .unreadableKey) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: "")) { XCTAssertEqual($0 as? ES256Error, .unreadableKey) }
        let truncated = String(Self.testKeyPEM.dropLast(40))
        XCTAssertThrowsError(try ES256PrivateKey(pem: truncated)) { XCTAssertEqual($0 as? ES256Error, .unreadableKey) }
        // Public keys: a point off the curve, wrong lengths.
        var offCurve = Base64URL.decode(Self.y) ?? []
        offCurve[31] ^= 0x01
        XCTAssertNil(ES256PublicKey(jwkX: Self.x, y: Base64URL.encode(offCurve)))
        XCTAssertNil(ES256PublicKey(jwkX: Self.x, y: "AQAB"))
        XCTAssertNil(ES256PublicKey(uncompressedPoint: [0x02] + [UInt8](repeating: 1, count: 64)))
    }

    func testES256JWTHasAlgAndKidAndVerifies() throws {
        let key = try ES256PrivateKey(pem: Self.testKeyPEM)
        let token = try JWT.signES256(
            claims: ["iss": "TEAM123456", "iat": .int(1_700_000_000), "exp": .int(1_700_003_600)],
            keyID: "KEY1234567", key: key)
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(segments.count, 3)
        let header = try JSONParser.parse(try XCTUnwrap(Base64URL.decode(String(segments[0]))))
        XCTAssertEqual(header.serializedString(), #"{"alg":"ES256","kid":"KEY1234567"}"#)
        let claims = try JWT.verifyES256(token, keys: ["KEY1234567": key.publicKey], now: 1_700_000_100)
        XCTAssertEqual(claims["iss"]?.stringValue, "TEAM123456")
        XCTAssertEqual(claims["iat"]?.int64Value, 1_700_000_000)
        XCTAssertThrowsError(try JWT.verifyES256(token, keys: ["other": key.publicKey], now: 1_700_000_100)) {
            XCTAssertEqual($0 as? JWTError, .unknownKey)
        }
        let rfcKey = try XCTUnwrap(ES256PublicKey(jwkX: Self.x, y: Self.y))
        XCTAssertThrowsError(try JWT.verifyES256(token, keys: ["KEY1234567": rfcKey], now: 1_700_000_100)) {
            XCTAssertEqual($0 as? JWTError, .badSignature)
        }
        // An HS256 token is refused by the ES256 verifier (no algorithm confusion).
        let hs = JWT.signHS256(claims: ["exp": .int(2_000_000_000)], key: JWTKey(id: "KEY1234567", secret: Array("x".utf8)))
        XCTAssertThrowsError(try JWT.verifyES256(hs, keys: ["KEY1234567": key.publicKey], now: 0)) {
            XCTAssertEqual($0 as? JWTError, .unsupportedAlgorithm)
        }
    }
}
