import SuplashJSON
import XCTest

@testable import SuplashCrypto

final class JWTTests: XCTestCase {
    let key = JWTKey(id: "k1", secret: Array("0123456789abcdef0123456789abcdef".utf8))
    var keys: [String: [UInt8]] { [key.id: key.secret] }
    let now: Int64 = 1_790_000_000

    func claims(exp: Int64? = nil, extra: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [("sub", "u-1"), ("sid", "s-1"), ("iat", .int(now))]
        members.append(("exp", .int(exp ?? now + 3600)))
        return .object(members + extra)
    }

    /// Builds a token with an arbitrary header and payload text, signed with `secret`.
    func forge(header: String, payload: String, secret: [UInt8]? = nil) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let sig = HMACSHA256.authenticationCode(key: secret ?? key.secret, message: Array(input.utf8))
        return input + "." + Base64URL.encode(sig)
    }

    func error(_ token: String, now: Int64? = nil) -> JWTError? {
        do {
            _ = try JWT.verifyHS256(token, keys: keys, now: now ?? self.now)
            return nil
        } catch {
            return error
        }
    }

    func testSignAndVerify() throws {
        let token = JWT.signHS256(claims: claims(), key: key)
        let parts = token.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(
            Base64URL.decode(String(parts[0])).map { String(decoding: $0, as: UTF8.self) },
            #"{"alg":"HS256","typ":"JWT","kid":"k1"}"#)
        XCTAssertFalse(token.contains("="))
        let verified = try JWT.verifyHS256(token, keys: keys, now: now)
        XCTAssertEqual(verified, claims())
        XCTAssertEqual(verified["sub"], "u-1")
    }

    func testKnownVector() {
        // Header/payload/secret fixed: the signature must be HMAC-SHA-256 over "h.p".
        let token = forge(header: #"{"alg":"HS256","typ":"JWT","kid":"k1"}"#, payload: #"{"exp":1790003600}"#)
        XCTAssertEqual(JWT.signHS256(claims: ["exp": .int(1_790_003_600)], key: key), token)
    }

    func testTamperedPayloadAndSignature() {
        let token = JWT.signHS256(claims: claims(), key: key)
        var parts = token.split(separator: ".").map(String.init)
        let evil = Base64URL.encode(claims(extra: [("admin", true)]).serialized())
        XCTAssertEqual(error([parts[0], evil, parts[2]].joined(separator: ".")), .badSignature)
        var sig = Base64URL.decode(parts[2]) ?? []
        sig[0] ^= 1
        parts[2] = Base64URL.encode(sig)
        XCTAssertEqual(error(parts.joined(separator: ".")), .badSignature)
        XCTAssertEqual(error(parts[0] + "." + parts[1] + "." + Base64URL.encode(sig.prefix(16))), .badSignature)
        // Signed with another secret under the same kid.
        let other = JWT.signHS256(claims: claims(), key: JWTKey(id: "k1", secret: Array("another secret, 32 bytes long!!!".utf8)))
        XCTAssertEqual(error(other), .badSignature)
    }

    func testAlgorithms() {
        let payload = claims().serializedString()
        let noneToken =
            Base64URL.encode(Array(#"{"alg":"none","typ":"JWT","kid":"k1"}"#.utf8)) + "."
            + Base64URL.encode(Array(payload.utf8)) + "."
        XCTAssertEqual(error(noneToken), .malformed)  // empty signature segment
        XCTAssertEqual(error(noneToken + "AAAA"), .unsupportedAlgorithm)
        XCTAssertEqual(error(forge(header: #"{"alg":"none","kid":"k1"}"#, payload: payload)), .unsupportedAlgorithm)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS512","kid":"k1"}"#, payload: payload)), .unsupportedAlgorithm)
        XCTAssertEqual(error(forge(header: #"{"alg":"RS256","kid":"k1"}"#, payload: payload)), .unsupportedAlgorithm)
        XCTAssertEqual(error(forge(header: #"{"alg":"hs256","kid":"k1"}"#, payload: payload)), .unsupportedAlgorithm)
        XCTAssertEqual(error(forge(header: #"{"kid":"k1"}"#, payload: payload)), .malformed)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","alg":"none","kid":"k1"}"#, payload: payload)), .malformed)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","kid":"k1","crit":["b64"]}"#, payload: payload)), .malformed)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","kid":"k1","typ":"JWE"}"#, payload: payload)), .malformed)
        XCTAssertNil(error(forge(header: #"{"alg":"HS256","kid":"k1"}"#, payload: payload)))
    }

    func testKeys() {
        let payload = claims().serializedString()
        XCTAssertEqual(error(JWT.signHS256(claims: claims(), key: JWTKey(id: "k2", secret: key.secret))), .unknownKey)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256"}"#, payload: payload)), .unknownKey)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","kid":1}"#, payload: payload)), .unknownKey)
        // Rotation: a verifier holding both keys accepts both.
        let k2 = JWTKey(id: "k2", secret: Array("second key second key second key".utf8))
        let both = [key.id: key.secret, k2.id: k2.secret]
        XCTAssertNoThrow(try JWT.verifyHS256(JWT.signHS256(claims: claims(), key: k2), keys: both, now: now))
    }

    func testTimeClaims() {
        XCTAssertEqual(error(JWT.signHS256(claims: claims(exp: now - 31), key: key)), .expired)
        XCTAssertEqual(error(JWT.signHS256(claims: claims(exp: now - 30), key: key)), .expired)
        XCTAssertNil(error(JWT.signHS256(claims: claims(exp: now - 29), key: key)))
        XCTAssertNil(error(JWT.signHS256(claims: claims(exp: now + 1), key: key)))
        // Missing or non-integer exp.
        XCTAssertEqual(error(JWT.signHS256(claims: ["sub": "u-1"], key: key)), .malformed)
        XCTAssertEqual(error(JWT.signHS256(claims: ["exp": "1790003600"], key: key)), .malformed)
        XCTAssertEqual(error(JWT.signHS256(claims: ["exp": 1790003600.5], key: key)), .malformed)
        XCTAssertEqual(error(JWT.signHS256(claims: ["exp": .number(JSONNumber(validatedText: "1e400"))], key: key)), .malformed)
        XCTAssertNil(error(JWT.signHS256(claims: ["exp": .number(JSONNumber(validatedText: "1.7900036e9"))], key: key)))
        // nbf / iat in the future.
        XCTAssertEqual(error(JWT.signHS256(claims: claims(extra: [("nbf", .int(now + 31))]), key: key)), .notYetValid)
        XCTAssertNil(error(JWT.signHS256(claims: claims(extra: [("nbf", .int(now + 30))]), key: key)))
        XCTAssertEqual(error(JWT.signHS256(claims: ["iat": .int(now + 120), "exp": .int(now + 3600)], key: key)), .notYetValid)
        XCTAssertEqual(error(JWT.signHS256(claims: claims(extra: [("nbf", "soon")]), key: key)), .malformed)
        // Extreme clocks do not overflow.
        XCTAssertNil(error(JWT.signHS256(claims: ["exp": .int(Int64.max)], key: key), now: Int64.max))
        XCTAssertNil(error(JWT.signHS256(claims: ["exp": .int(Int64.min + 1)], key: key), now: Int64.min))
    }

    func testMalformed() {
        let token = JWT.signHS256(claims: claims(), key: key)
        let parts = token.split(separator: ".").map(String.init)
        for bad in [
            "", ".", "..", "a.b", "a.b.c.d", token + ".", "." + token, parts[0] + ".." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "=", parts[0] + "=." + parts[1] + "." + parts[2],
            " " + token, token + " ", String(repeating: "a", count: 9000),
        ] {
            XCTAssertNotNil(error(bad), bad)
        }
        XCTAssertEqual(error("a.b.c.d"), .malformed)
        XCTAssertEqual(error(parts[0] + "." + parts[1] + "." + parts[2] + "."), .malformed)
        // Claims that are not an object (validly signed).
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","kid":"k1"}"#, payload: "[1]")), .malformed)
        XCTAssertEqual(error(forge(header: #"{"alg":"HS256","kid":"k1"}"#, payload: "{\"exp\":1,}")), .malformed)
        XCTAssertEqual(error(forge(header: "[]", payload: "{}")), .malformed)
        XCTAssertEqual(error(forge(header: "not json", payload: "{}")), .malformed)
    }

    func testErrorDescriptionsAreContentFree() {
        let token = JWT.signHS256(claims: claims(exp: now - 100), key: key)
        let all: [JWTError] = [.malformed, .unsupportedAlgorithm, .unknownKey, .badSignature, .expired, .notYetValid]
        for e in all {
            XCTAssertFalse(e.description.contains(token))
            XCTAssertFalse(String(reflecting: e).contains("k1"))
        }
        XCTAssertEqual(error(token), .expired)
    }
}
