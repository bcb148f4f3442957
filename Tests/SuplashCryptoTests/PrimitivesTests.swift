import Dispatch
import Synchronization
import XCTest

@testable import SuplashCrypto

private func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = Array(hex.utf8)[...]
    while chars.count >= 2 {
        out.append(UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) ?? 0)
        chars = chars.dropFirst(2)
    }
    return out
}

final class DigestTests: XCTestCase {
    func testSHA256FIPSVectors() {
        // FIPS 180-2 Appendix B / NIST CAVP examples.
        XCTAssertEqual(SHA256.hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex([UInt8]()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(
            SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    func testHMACSHA256RFC4231() {
        let cases: [([UInt8], [UInt8], String)] = [
            (
                [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (
                Array(1...25), [UInt8](repeating: 0xcd, count: 50),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
            ),
            (
                [UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                [UInt8](repeating: 0xaa, count: 131),
                Array(
                    "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
                        .utf8),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
            ),
        ]
        for (key, message, expected) in cases {
            XCTAssertEqual(hexString(HMACSHA256.authenticationCode(key: key, message: message)), expected)
            // Non-contiguous input takes the copying path and agrees.
            XCTAssertEqual(hexString(HMACSHA256.authenticationCode(key: key, message: message.lazy.map { $0 })), expected)
            // A prepared key gives the same code, every time it is used.
            let prepared = HMACSHA256.Key(key)
            XCTAssertEqual(hexString(prepared.authenticationCode(message)), expected)
            XCTAssertEqual(hexString(prepared.authenticationCode(message)), expected)
        }
        // RFC 4231 test case 5 (truncated to 128 bits).
        let tc5 = HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0c, count: 20), message: Array("Test With Truncation".utf8))
        XCTAssertEqual(hexString(tc5.prefix(16)), "a3b6167473100ee06e0c796c2955552b")
        // Empty key and message are valid inputs.
        XCTAssertEqual(
            hexString(HMACSHA256.authenticationCode(key: [], message: [UInt8]())),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        XCTAssertEqual(
            hexString(HMACSHA256.Key([]).authenticationCode([])),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        // One prepared key used from many threads at once agrees with the one-shot code.
        let shared = HMACSHA256.Key(Array("shared key".utf8))
        let expected = HMACSHA256.authenticationCode(key: Array("shared key".utf8), message: Array("payload".utf8))
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            for _ in 0..<50 where shared.authenticationCode(Array("payload".utf8)) != expected {
                mismatches.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(mismatches.withLock { $0 }, 0)
    }

    func testSecureRandom() {
        XCTAssertEqual(SecureRandom.bytes(0), [])
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
        XCTAssertNotEqual(a, [UInt8](repeating: 0, count: 32))
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(constantTimeEquals([], []))
        XCTAssertTrue(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3], [1, 2]))
        XCTAssertFalse(constantTimeEquals([], [0]))
    }
}

final class Base64Tests: XCTestCase {
    // RFC 4648 §10.
    let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ]

    func testBase64URLVectors() {
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8))
        }
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff]), "-_8")
        XCTAssertEqual(Base64URL.decode("-_8"), [0xfb, 0xff])
        XCTAssertEqual(Base64URL.encode([0xfb, 0xef, 0xbe]), "----")
        let random = SecureRandom.bytes(1000)
        XCTAssertEqual(Base64URL.decode(Base64URL.encode(random)), random)
    }

    func testBase64URLRejects() {
        for bad in ["Zg==", "Zm8=", "+/8", "a/b", "Zm9v YmFy", "Zm9v\n", "Z", "Zm9vY", "Zh", "Zm9", "é", "Zg%3D"] {
            XCTAssertNil(Base64URL.decode(bad), bad)
        }
    }

    func testStandardBase64() {
        for (plain, encoded) in [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ] {
            XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8))
            XCTAssertEqual(Base64.decode(encoded.replacingOccurrences(of: "=", with: "")), Array(plain.utf8))
        }
        XCTAssertEqual(Base64.encode([0xfb, 0xff]), "+/8=")
        XCTAssertEqual(Base64.encode([0xfb, 0xff], padded: false), "+/8")
        for bad in ["Zg=", "Zg===", "Z===", "====", "Zm9v====", "Zg=a", "-_8", "Zh==", "Zm9v\r\n"] {
            XCTAssertNil(Base64.decode(bad), bad)
        }
    }
}
