import SuplashDomain
import XCTest

final class UUIDTextTests: XCTestCase {
    func testNormalizedLowercasesCanonicalText() {
        XCTAssertEqual(UUIDText.normalized("0192F6E4-1C2B-7A3D-8E4F-5A6B7C8D9E0F"), "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f")
        XCTAssertEqual(UUIDText.normalized("0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f"), "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f")
        XCTAssertEqual(UUIDText.normalized("AbCdEf01-2345-6789-aBcD-eF0123456789"), "abcdef01-2345-6789-abcd-ef0123456789")
        XCTAssertEqual(UUIDText.normalized("00000000-0000-0000-0000-000000000000"), "00000000-0000-0000-0000-000000000000")
        XCTAssertEqual(UUIDText.normalized("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"), "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    func testNormalizedIsIdempotent() throws {
        let once = try XCTUnwrap(UUIDText.normalized("6BA7B810-9DAD-11D1-80B4-00C04FD430C8"))
        XCTAssertEqual(UUIDText.normalized(once), once)
    }

    func testNormalizedRejectsNonCanonicalText() {
        let bad = [
            "", "not-a-uuid",
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0",  // 35 chars
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f0",  // 37 chars
            "0192f6e41c2b7a3d8e4f5a6b7c8d9e0f",  // no dashes
            "0192f6e4-1c2b7a3d-8e4f-5a6b7c8d9e0f-",  // dash moved
            "0192f6e41-c2b-7a3d-8e4f-5a6b7c8d9e0f",  // dash in the wrong place
            "0192f6e4_1c2b_7a3d_8e4f_5a6b7c8d9e0f",  // wrong separator
            "{0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f}",  // braces
            "urn:uuid:0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f",
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0g",  // g is not hex
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0 ",
            " 0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0",
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0\u{0}",
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0é",  // 36 characters, 37 bytes
            "０192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0",  // full-width digit
            "------------------------------------",
        ]
        for text in bad {
            XCTAssertNil(UUIDText.normalized(text), text.debugDescription)
        }
    }

    private func random(_ seed: UInt8) -> [UInt8] { (0..<10).map { UInt8(truncatingIfNeeded: Int($0) * 37 + Int(seed)) } }

    func testVersion7Layout() throws {
        for seed: UInt8 in [0, 0x5A, 0xFF] {
            for bytes in [random(seed), [UInt8](repeating: 0xFF, count: 10), [UInt8](repeating: 0, count: 10)] {
                let id = UUIDText.version7(unixMillis: 1_795_940_100_000, random: bytes)
                XCTAssertEqual(UUIDText.normalized(id), id, "canonical lower-case text")
                let chars = Array(id)
                XCTAssertEqual(chars[14], "7", "version nibble: \(id)")
                XCTAssertTrue("89ab".contains(chars[19]), "variant bits 10xx: \(id)")
            }
        }
    }

    func testVersion7TimePrefixIsBigEndianMillis() {
        // 0x0192_F6E4_1C2B = 1_730_460_478_507 ms.
        let id = UUIDText.version7(unixMillis: 0x0192_F6E4_1C2B, random: [UInt8](repeating: 0, count: 10))
        XCTAssertEqual(id, "0192f6e4-1c2b-7000-8000-000000000000")
        let ones = UUIDText.version7(unixMillis: 0x0192_F6E4_1C2B, random: [UInt8](repeating: 0xFF, count: 10))
        XCTAssertEqual(ones, "0192f6e4-1c2b-7fff-bfff-ffffffffffff")
        XCTAssertEqual(
            UUIDText.version7(unixMillis: 0, random: [UInt8](repeating: 0, count: 10)),
            "00000000-0000-7000-8000-000000000000")
    }

    func testVersion7RandomBitsAreKept() {
        let bytes: [UInt8] = [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0, 0x11, 0x22]
        let id = UUIDText.version7(unixMillis: 1, random: bytes)
        // 0x12 → 0x72 (version), 0x56 → 0x96 (variant), the rest unchanged.
        XCTAssertEqual(id, "00000000-0001-7234-9678-9abcdef01122")
    }

    func testVersion7SortsByTimeAsText() {
        let times: [Int64] = [
            0, 1, 255, 256, 65_535, 946_684_800_000, 1_768_462_200_000, 1_768_462_200_001,
            1_795_940_100_000, 253_402_300_799_999,
        ]
        for (earlier, later) in zip(times, times.dropFirst()) {
            // Even the largest random part of the earlier id sorts before the smallest of the later.
            let a = UUIDText.version7(unixMillis: earlier, random: [UInt8](repeating: 0xFF, count: 10))
            let b = UUIDText.version7(unixMillis: later, random: [UInt8](repeating: 0x00, count: 10))
            XCTAssertLessThan(a, b, "\(earlier) < \(later)")
        }
    }

    func testVersion7ClampsNegativeTimeToZero() {
        let id = UUIDText.version7(unixMillis: -5, random: [UInt8](repeating: 0, count: 10))
        XCTAssertTrue(id.hasPrefix("00000000-0000-7"), id)
    }
}
