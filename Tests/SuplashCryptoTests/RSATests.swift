import SuplashJSON
import XCTest

@testable import SuplashCrypto

/// RS256 verification (RFC 7515 Appendix A.2 vector) and JWKS parsing.
final class RSATests: XCTestCase {
    /// RFC 7515 A.2.1: the RSA key as a JWK.
    static let n =
        "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
    static let e = "AQAB"
    /// RFC 7515 A.2.1: the complete JWS (header `{"alg":"RS256"}`).
    static let token =
        "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw"

    func parts() throws -> (input: [UInt8], signature: [UInt8]) {
        let segments = Self.token.split(separator: ".")
        XCTAssertEqual(segments.count, 3)
        return (Array((segments[0] + "." + segments[1]).utf8), try XCTUnwrap(Base64URL.decode(String(segments[2]))))
    }

    func testRFC7515A2SignatureVerifies() throws {
        let key = try XCTUnwrap(RSAPublicKey(jwkModulus: Self.n, exponent: Self.e))
        XCTAssertEqual(key.modulusLength, 256)
        let (input, signature) = try parts()
        XCTAssertTrue(key.verifyPKCS1SHA256(signature: signature, message: input))
    }

    func testTamperedInputOrSignatureFails() throws {
        let key = try XCTUnwrap(RSAPublicKey(jwkModulus: Self.n, exponent: Self.e))
        let (input, signature) = try parts()
        var otherInput = input
        otherInput[otherInput.count - 3] ^= 0x01
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: signature, message: otherInput))
        var otherSignature = signature
        otherSignature[10] ^= 0x80
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: otherSignature, message: input))
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: Array(signature.dropLast()), message: input), "short signature")
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: [], message: input))
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: [UInt8](repeating: 0xFF, count: 256), message: input))
    }

    func testOtherExponentFails() throws {
        let key = try XCTUnwrap(RSAPublicKey(jwkModulus: Self.n, exponent: "Aw"))  // e = 3
        let (input, signature) = try parts()
        XCTAssertFalse(key.verifyPKCS1SHA256(signature: signature, message: input))
    }

    func testWeakOrBrokenKeysAreRefused() {
        XCTAssertNil(RSAPublicKey(modulus: [UInt8](repeating: 0xC3, count: 128), exponent: [1, 0, 1]), "1024-bit modulus")
        XCTAssertNil(RSAPublicKey(modulus: [UInt8](repeating: 0xC3, count: 1025), exponent: [1, 0, 1]), "8200-bit modulus")
        XCTAssertNil(RSAPublicKey(jwkModulus: Self.n, exponent: "AQ"), "e = 1")
        XCTAssertNil(RSAPublicKey(jwkModulus: Self.n, exponent: "Ag"), "even e")
        XCTAssertNil(RSAPublicKey(jwkModulus: "not base64!", exponent: "AQAB"))
        XCTAssertNotNil(
            RSAPublicKey(modulus: [0, 0] + (Base64URL.decode(Self.n) ?? []), exponent: [0, 1, 0, 1]),
            "leading zero bytes are stripped")
    }

    func testRS256JWTChecksHeaderBeforeSignature() throws {
        let key = try XCTUnwrap(RSAPublicKey(jwkModulus: Self.n, exponent: Self.e))
        // The RFC token has no kid: it names no key of a key set.
        XCTAssertThrowsError(try JWT.verifyRS256(Self.token, keys: ["k": key], now: 1_300_819_000)) {
            XCTAssertEqual($0 as? JWTError, .unknownKey)
        }
        // HS256 and none are refused (no key confusion).
        let hs = JWT.signHS256(claims: ["exp": .int(2_000_000_000)], key: JWTKey(id: "k", secret: Array("x".utf8)))
        XCTAssertThrowsError(try JWT.verifyRS256(hs, keys: ["k": key], now: 1_300_819_000)) {
            XCTAssertEqual($0 as? JWTError, .unsupportedAlgorithm)
        }
        let none = Base64URL.encode(Array(#"{"alg":"none","kid":"k"}"#.utf8)) + "." + Base64URL.encode(Array("{}".utf8)) + ".x"
        XCTAssertThrowsError(try JWT.verifyRS256(none, keys: ["k": key], now: 0)) {
            XCTAssertEqual($0 as? JWTError, .unsupportedAlgorithm)
        }
        XCTAssertThrowsError(try JWT.verifyRS256("a.b", keys: ["k": key], now: 0)) { XCTAssertEqual($0 as? JWTError, .malformed) }
        XCTAssertEqual(JWT.unverifiedKeyID(none), "k")
        XCTAssertNil(JWT.unverifiedKeyID(Self.token))
    }

    func testJWKSKeepsOnlyRSASigningKeys() {
        let document = """
            {"keys":[
              {"kty":"RSA","kid":"a","use":"sig","alg":"RS256","n":"\(Self.n)","e":"AQAB"},
              {"kty":"RSA","kid":"b","n":"\(Self.n)","e":"AQAB"},
              {"kty":"RSA","kid":"enc","use":"enc","n":"\(Self.n)","e":"AQAB"},
              {"kty":"RSA","kid":"ps","alg":"PS256","n":"\(Self.n)","e":"AQAB"},
              {"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"},
              {"kty":"RSA","kid":"weak","n":"AQAB","e":"AQAB"},
              {"kty":"RSA","n":"\(Self.n)","e":"AQAB"}
            ]}
            """
        let keys = JWKS.rsaKeys(from: Array(document.utf8))
        XCTAssertEqual(keys.map { Set($0.keys) }, ["a", "b"])
        XCTAssertNil(JWKS.rsaKeys(from: Array("[]".utf8)))
        XCTAssertNil(JWKS.rsaKeys(from: Array("not json".utf8)))
    }
}
