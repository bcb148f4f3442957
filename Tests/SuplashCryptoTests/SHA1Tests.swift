import SuplashCrypto
import XCTest

final class SHA1Tests: XCTestCase {
    func testSHA1FIPSVectors() {
        XCTAssertEqual(hexString(SHA1.hash(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(hexString(SHA1.hash([UInt8]())), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }
}
