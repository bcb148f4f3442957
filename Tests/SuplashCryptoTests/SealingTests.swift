import Foundation
import XCTest

@testable import SuplashCrypto

/// Bytes from hex text (test vectors).
private func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    precondition(digits.count % 2 == 0)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! }
}

final class AES256GCMTests: XCTestCase {
    /// McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", test case 16 (AES-256,
    /// 96-bit IV, 60-byte plaintext, 20 bytes of associated data) — also in NIST's GCM vectors.
    func testMcGrewViegaTestCase16() throws {
        let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let plaintext = bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let nonce = bytes("cafebabefacedbaddecaf888")
        let expectedCiphertext = bytes(
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        let expectedTag = bytes("76fc6ece0f4e1768cddf8853bb2d551b")

        let (ciphertext, tag) = try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: aad)
        XCTAssertEqual(ciphertext, expectedCiphertext)
        XCTAssertEqual(tag, expectedTag)
        XCTAssertEqual(try AES256GCM.open(expectedCiphertext, tag: expectedTag, key: key, nonce: nonce, associatedData: aad), plaintext)
    }

    /// McGrew & Viega test cases 13 (empty plaintext: tag only) and 14 (one zero block), zero key and IV.
    func testMcGrewViegaTestCases13And14() throws {
        let key = [UInt8](repeating: 0, count: 32)
        let nonce = [UInt8](repeating: 0, count: 12)
        let empty = try AES256GCM.seal([], key: key, nonce: nonce)
        XCTAssertEqual(empty.ciphertext, [])
        XCTAssertEqual(empty.tag, bytes("530f8afbc74536b9a963b4f1c4cb738b"))
        let block = try AES256GCM.seal([UInt8](repeating: 0, count: 16), key: key, nonce: nonce)
        XCTAssertEqual(block.ciphertext, bytes("cea7403d4d606b6e074ec5d3baf39d18"))
        XCTAssertEqual(block.tag, bytes("d0d1c8a799996bf0265b98b5d48ab919"))
    }

    func testEveryChangedByteFailsAuthentication() throws {
        let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = bytes("cafebabefacedbaddecaf888")
        let aad = Array("aad".utf8)
        let (ciphertext, tag) = try AES256GCM.seal(Array("refresh token".utf8), key: key, nonce: nonce, associatedData: aad)
        for i in ciphertext.indices {
            var changed = ciphertext
            changed[i] ^= 0x01
            XCTAssertThrowsError(try AES256GCM.open(changed, tag: tag, key: key, nonce: nonce, associatedData: aad)) {
                XCTAssertEqual($0 as? SealingError, .authenticationFailed)
            }
        }
        for i in tag.indices {
            var changed = tag
            changed[i] ^= 0x80
            XCTAssertThrowsError(try AES256GCM.open(ciphertext, tag: changed, key: key, nonce: nonce, associatedData: aad)) {
                XCTAssertEqual($0 as? SealingError, .authenticationFailed)
            }
        }
        XCTAssertThrowsError(try AES256GCM.open(ciphertext, tag: tag, key: key, nonce: nonce, associatedData: Array("aaD".utf8))) {
            XCTAssertEqual($0 as? SealingError, .authenticationFailed)
        }
        XCTAssertThrowsError(try AES256GCM.open(ciphertext, tag: Array(tag.prefix(12)), key: key, nonce: nonce, associatedData: aad)) {
            XCTAssertEqual($0 as? SealingError, .authenticationFailed, "a truncated tag is refused, not checked on fewer bits")
        }
        XCTAssertThrowsError(try AES256GCM.seal([1], key: Array(key.prefix(16)), nonce: nonce)) {
            XCTAssertEqual($0 as? SealingError, .invalidKeyOrNonce)
        }
        XCTAssertThrowsError(try AES256GCM.seal([1], key: key, nonce: Array(nonce.prefix(8)))) {
            XCTAssertEqual($0 as? SealingError, .invalidKeyOrNonce)
        }
    }
}

final class HKDFTests: XCTestCase {
    /// RFC 5869 appendix A.1 (SHA-256, basic test case).
    func testRFC5869TestCase1() throws {
        let okm = try HKDFSHA256.deriveKey(
            inputKeyingMaterial: [UInt8](repeating: 0x0b, count: 22),
            salt: bytes("000102030405060708090a0b0c"), info: bytes("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        XCTAssertEqual(okm, bytes("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    /// RFC 5869 appendix A.3 (SHA-256, zero-length salt and info).
    func testRFC5869TestCase3() throws {
        let okm = try HKDFSHA256.deriveKey(inputKeyingMaterial: [UInt8](repeating: 0x0b, count: 22), length: 42)
        XCTAssertEqual(okm, bytes("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    func testRefusesEmptyKeyAndBadLengths() {
        for (ikm, length) in [([UInt8](), 32), ([UInt8](repeating: 1, count: 32), 0), ([UInt8](repeating: 1, count: 32), 8161)] {
            XCTAssertThrowsError(try HKDFSHA256.deriveKey(inputKeyingMaterial: ikm, length: length)) {
                XCTAssertEqual($0 as? SealingError, .keyDerivationFailed)
            }
        }
    }
}

final class SealingKeyringTests: XCTestCase {
    let keyA = SealingKey(bytes: [UInt8](repeating: 0xA1, count: 32))!
    let keyB = SealingKey(bytes: [UInt8](repeating: 0xB2, count: 32))!
    let context = SealingContext(table: "apple_tokens", column: "refresh_token", rowID: "3f6c8a52-0000-4000-8000-000000000001")
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sealing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes `contents` to a new file with permission bits `mode` and returns its path.
    func keyFile(_ name: String, _ contents: [UInt8], mode: Int = 0o600) throws -> String {
        let path = directory.appendingPathComponent(name).path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(contents)))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func testKeyIDIsDerivedAndNeverTheKey() throws {
        XCTAssertEqual(keyA.id.count, 16)
        XCTAssertTrue(keyA.id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertNotEqual(keyA.id, keyB.id)
        XCTAssertEqual(keyA.id, SealingKey(bytes: [UInt8](repeating: 0xA1, count: 32))!.id, "stable for the same key")
        XCTAssertEqual(
            keyA.id,
            hexString(
                HMACSHA256.authenticationCode(
                    key: [UInt8](repeating: 0xA1, count: 32),
                    message: Array("suplash sealing key id v1".utf8)
                ).prefix(8)))
        XCTAssertFalse(keyA.id.contains("a1a1"))
        XCTAssertEqual("\(keyA)", "SealingKey(\(keyA.id))")
        XCTAssertNil(SealingKey(bytes: [UInt8](repeating: 1, count: 31)))
        XCTAssertNil(SealingKey(bytes: [UInt8](repeating: 1, count: 33)))
    }

    func testRoundTripAndEnvelopeLayout() throws {
        let ring = SealingKeyring(current: keyA)!
        let envelope = try ring.seal("r.apple-refresh-token", context: context)
        let parts = envelope.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(parts[0], "s1")
        XCTAssertEqual(parts[1], keyA.id)
        let payload = try XCTUnwrap(Base64URL.decode(parts[2]))
        XCTAssertEqual(payload.count, 12 + "r.apple-refresh-token".utf8.count + 16)
        XCTAssertFalse(envelope.contains("refresh"), "no plaintext in the envelope")
        XCTAssertEqual(try ring.openText(envelope, context: context), "r.apple-refresh-token")
        XCTAssertEqual(try ring.open(try ring.seal([], context: context), context: context), [])
        XCTAssertEqual(try SealingKeyring.keyID(of: envelope), keyA.id)
    }

    func testFreshNonceForEverySeal() throws {
        let ring = SealingKeyring(current: keyA)!
        var nonces = Set<[UInt8]>()
        for _ in 0..<64 {
            let envelope = try ring.seal("same", context: context)
            let payload = try XCTUnwrap(Base64URL.decode(String(envelope.split(separator: ".")[2])))
            nonces.insert(Array(payload.prefix(12)))
        }
        XCTAssertEqual(nonces.count, 64)
    }

    func testWrongContextRefused() throws {
        let ring = SealingKeyring(current: keyA)!
        let envelope = try ring.seal("token", context: context)
        let others = [
            SealingContext(table: "apns_tokens", column: context.column, rowID: context.rowID),
            SealingContext(table: context.table, column: "access_token", rowID: context.rowID),
            SealingContext(table: context.table, column: context.column, rowID: "3f6c8a52-0000-4000-8000-000000000002"),
            // Length prefixes: moving a character between fields changes the data.
            SealingContext(table: "apple_token", column: "srefresh_token", rowID: context.rowID),
        ]
        for other in others {
            XCTAssertThrowsError(try ring.open(envelope, context: other)) { XCTAssertEqual($0 as? SealingError, .authenticationFailed) }
        }
    }

    func testTamperedEnvelopeRefused() throws {
        let ring = SealingKeyring(current: keyA)!
        let envelope = try ring.seal("token", context: context)
        let parts = envelope.split(separator: ".").map(String.init)
        let payload = try XCTUnwrap(Base64URL.decode(parts[2]))
        for i in payload.indices {
            var changed = payload
            changed[i] ^= 0x04
            let tampered = parts[0] + "." + parts[1] + "." + Base64URL.encode(changed)
            XCTAssertThrowsError(try ring.open(tampered, context: context)) { XCTAssertEqual($0 as? SealingError, .authenticationFailed) }
        }
    }

    func testMalformedUnsupportedAndUnknownKeyRefused() throws {
        let ring = SealingKeyring(current: keyA)!
        let envelope = try ring.seal("token", context: context)
        let parts = envelope.split(separator: ".").map(String.init)
        let malformed = [
            "", "s1", "s1.\(keyA.id)", "s1.\(keyA.id).", "s1..\(parts[2])", "s1.\(keyA.id.uppercased()).\(parts[2])",
            "s1.\(keyA.id.prefix(15)).\(parts[2])", "s1.\(keyA.id).\(parts[2])=", "s1.\(keyA.id).\(parts[2]).x",
            "s1.\(keyA.id).\(Base64URL.encode([UInt8](repeating: 0, count: 27)))", "x1.\(keyA.id).\(parts[2])",
        ]
        for text in malformed {
            XCTAssertThrowsError(try ring.open(text, context: context), text) { XCTAssertEqual($0 as? SealingError, .malformedEnvelope) }
        }
        XCTAssertThrowsError(try ring.open("s2.\(keyA.id).\(parts[2])", context: context)) {
            XCTAssertEqual($0 as? SealingError, .unsupportedVersion)
        }
        let other = SealingKeyring(current: keyB)!
        XCTAssertThrowsError(try other.open(envelope, context: context)) { XCTAssertEqual($0 as? SealingError, .unknownKeyID(keyA.id)) }
        // A real key under another key's id: the id is bound into the data and the key differs.
        let relabelled = "s1.\(keyB.id).\(parts[2])"
        XCTAssertThrowsError(try SealingKeyring(current: keyA, older: [keyB])!.open(relabelled, context: context)) {
            XCTAssertEqual($0 as? SealingError, .authenticationFailed)
        }
    }

    func testRotationOpensOldValuesAndReseals() throws {
        let old = SealingKeyring(current: keyA)!
        let envelope = try old.seal("token", context: context)
        let rotated = SealingKeyring(current: keyB, older: [keyA])!
        XCTAssertEqual(rotated.keyIDs, [keyB.id, keyA.id])
        XCTAssertTrue(try rotated.needsReseal(envelope))
        XCTAssertEqual(try rotated.openText(envelope, context: context), "token")
        let resealed = try rotated.reseal(envelope, context: context)
        XCTAssertEqual(try SealingKeyring.keyID(of: resealed), keyB.id)
        XCTAssertFalse(try rotated.needsReseal(resealed))
        XCTAssertEqual(try SealingKeyring(current: keyB)!.openText(resealed, context: context), "token")
        XCTAssertNil(SealingKeyring(current: keyA, older: [keyA]), "a key listed twice")
    }

    func testBlindIndex() throws {
        let ring = SealingKeyring(current: keyA)!
        let token = String(repeating: "ab01", count: 16)
        let index = try ring.blindIndex(apnsDeviceToken: token)
        XCTAssertEqual(index.count, 64)
        XCTAssertEqual(try ring.blindIndex(apnsDeviceToken: token.uppercased()), index, "normalised to lower-case hex")
        XCTAssertNotEqual(try ring.blindIndex(apnsDeviceToken: String(repeating: "ab02", count: 16)), index)
        XCTAssertNotEqual(try SealingKeyring(current: keyB)!.blindIndex(apnsDeviceToken: token), index, "keyed")
        // The subkey is HKDF of the sealing key, not the sealing key itself.
        let expectedSubkey = try HKDFSHA256.deriveKey(
            inputKeyingMaterial: [UInt8](repeating: 0xA1, count: 32),
            salt: Array("suplash blind index v1".utf8), info: Array("apns device token".utf8),
            length: 32)
        XCTAssertEqual(index, hexString(HMACSHA256.authenticationCode(key: expectedSubkey, message: Array(token.utf8))))
        XCTAssertNotEqual(index, hexString(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0xA1, count: 32), message: Array(token.utf8))))
        XCTAssertFalse(index.contains(token))
        let both = try SealingKeyring(current: keyB, older: [keyA])!.blindIndexes(apnsDeviceToken: token)
        XCTAssertEqual(both, [try SealingKeyring(current: keyB)!.blindIndex(apnsDeviceToken: token), index])
        for bad in [
            "", "abc", String(repeating: "a", count: 14), String(repeating: "a", count: 202), String(repeating: "g", count: 64),
            " " + String(repeating: "a", count: 63), String(repeating: "a", count: 63),
        ] {
            XCTAssertThrowsError(try ring.blindIndex(apnsDeviceToken: bad), bad) { XCTAssertEqual($0 as? SealingError, .invalidDeviceToken) }
        }
    }

    func testLoadKeyFiles() throws {
        let current = try keyFile("current.key", [UInt8](repeating: 0xB2, count: 32))
        let older = try keyFile("older.key", [UInt8](repeating: 0xA1, count: 32), mode: 0o400)
        let ring = try SealingKeyring.load(currentFile: current, olderFiles: [older])
        XCTAssertEqual(ring.currentKeyID, keyB.id)
        XCTAssertEqual(ring.keyIDs, [keyB.id, keyA.id])
        let envelope = try SealingKeyring(current: keyA)!.seal("token", context: context)
        XCTAssertEqual(try ring.openText(envelope, context: context), "token")
    }

    func testLoadRefusals() throws {
        let short = try keyFile("short.key", [UInt8](repeating: 1, count: 31))
        let long = try keyFile("long.key", [UInt8](repeating: 1, count: 64))
        let hexText = try keyFile("hex.key", Array(String(repeating: "ab", count: 32).utf8))
        let groupReadable = try keyFile("group.key", [UInt8](repeating: 1, count: 32), mode: 0o640)
        let worldReadable = try keyFile("world.key", [UInt8](repeating: 1, count: 32), mode: 0o604)
        let missing = directory.appendingPathComponent("missing.key").path
        let good = try keyFile("good.key", [UInt8](repeating: 1, count: 32))
        let same = try keyFile("same.key", [UInt8](repeating: 1, count: 32))

        func refusal(_ current: String, _ older: [String] = []) -> SealingKeyFileError? {
            do {
                _ = try SealingKeyring.load(currentFile: current, olderFiles: older)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(refusal(short), .wrongSize(path: short, size: 31))
        XCTAssertEqual(refusal(long), .wrongSize(path: long, size: 64))
        XCTAssertEqual(refusal(hexText), .wrongSize(path: hexText, size: 64))
        XCTAssertEqual(refusal(groupReadable), .tooPermissive(path: groupReadable, mode: 0o640))
        XCTAssertEqual(refusal(worldReadable), .tooPermissive(path: worldReadable, mode: 0o604))
        XCTAssertEqual(refusal(good, [worldReadable]), .tooPermissive(path: worldReadable, mode: 0o604), "older keys are checked too")
        XCTAssertEqual(refusal(directory.path), .notRegularFile(path: directory.path))
        let fifo = directory.appendingPathComponent("fifo.key").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(refusal(fifo), .notRegularFile(path: fifo), "refused without waiting for a writer")
        XCTAssertEqual(refusal(good, [same]), .duplicateKey(path: same))
        guard case .unreadable(let path, let code)? = refusal(missing) else { return XCTFail("missing file accepted") }
        XCTAssertEqual(path, missing)
        XCTAssertEqual(code, ENOENT)

        let message = "\(SealingKeyFileError.tooPermissive(path: groupReadable, mode: 0o640))"
        XCTAssertTrue(message.contains(groupReadable) && message.contains("640") && message.contains("chmod 600"), message)
        let sizeMessage = "\(SealingKeyFileError.wrongSize(path: short, size: 31))"
        XCTAssertTrue(sizeMessage.contains(short) && sizeMessage.contains("31") && sizeMessage.contains("/dev/urandom"), sizeMessage)
    }
}
