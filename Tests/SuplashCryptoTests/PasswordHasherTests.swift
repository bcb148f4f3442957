import Dispatch
import XCTest

@testable import SuplashCrypto

final class PasswordHasherTests: XCTestCase {
    func testHashAndVerify() throws {
        let phc = try PasswordHasher.hash("correct horse battery staple")
        XCTAssertTrue(phc.hasPrefix("$argon2id$v=19$m=12288,t=3,p=1$"), phc)
        XCTAssertTrue(PasswordHasher.verify("correct horse battery staple", phc: phc))
        XCTAssertFalse(PasswordHasher.verify("correct horse battery stapl", phc: phc))
        XCTAssertFalse(PasswordHasher.verify("", phc: phc))
        XCTAssertFalse(PasswordHasher.needsRehash(phc: phc))
        // Salted: the same password hashes differently.
        XCTAssertNotEqual(try PasswordHasher.hash("correct horse battery staple"), phc)
    }

    func testUnicodeAndEmptyPasswords() throws {
        let cheap = Argon2idParameters(memoryKiB: 64, iterations: 1)
        let phc = try PasswordHasher.hash("şifre🔑", parameters: cheap)
        XCTAssertTrue(phc.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$"))
        XCTAssertTrue(PasswordHasher.verify("şifre🔑", phc: phc))
        XCTAssertFalse(PasswordHasher.verify("sifre🔑", phc: phc))
        let empty = try PasswordHasher.hash("", parameters: cheap)
        XCTAssertTrue(PasswordHasher.verify("", phc: empty))
    }

    func testMalformedPHCIsFalse() throws {
        let cheap = Argon2idParameters(memoryKiB: 64, iterations: 1)
        let phc = try PasswordHasher.hash("pw", parameters: cheap)
        let malformed = [
            "", "garbage", "$argon2id$", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g",
            phc.replacingOccurrences(of: "argon2id", with: "argon2d"),
            phc.replacingOccurrences(of: "m=64", with: "m=x"),
            phc.replacingOccurrences(of: "m=64", with: "m=8589934592"),
            phc.replacingOccurrences(of: "m=64", with: "m=4294967295"),
            phc.replacingOccurrences(of: "t=1", with: "t=1000000"),
            String(phc.dropLast(3)) + "!!!",
            phc + "$extra",
            String(phc.prefix(phc.count - 44)),
        ]
        for bad in malformed {
            XCTAssertFalse(PasswordHasher.verify("pw", phc: bad), bad)
            XCTAssertTrue(PasswordHasher.needsRehash(phc: bad), bad)
        }
    }

    func testNeedsRehash() throws {
        let cheap = Argon2idParameters(memoryKiB: 64, iterations: 1)
        let phc = try PasswordHasher.hash("pw", parameters: cheap)
        XCTAssertFalse(PasswordHasher.needsRehash(phc: phc, parameters: cheap))
        XCTAssertTrue(PasswordHasher.needsRehash(phc: phc))
        XCTAssertTrue(PasswordHasher.needsRehash(phc: phc, parameters: Argon2idParameters(memoryKiB: 64, iterations: 2)))
        XCTAssertTrue(PasswordHasher.needsRehash(phc: phc, parameters: Argon2idParameters(memoryKiB: 64, iterations: 1, hashLength: 16)))
        XCTAssertTrue(PasswordHasher.needsRehash(phc: phc, parameters: Argon2idParameters(memoryKiB: 64, iterations: 1, saltLength: 32)))
    }

    func testInvalidParametersThrow() {
        XCTAssertThrowsError(try PasswordHasher.hash("pw", parameters: Argon2idParameters(memoryKiB: 1, iterations: 1)))
        XCTAssertThrowsError(try PasswordHasher.hash("pw", parameters: Argon2idParameters(memoryKiB: 64, iterations: 0)))
        XCTAssertThrowsError(try PasswordHasher.hash("pw", parameters: Argon2idParameters(memoryKiB: 64, iterations: 1, saltLength: 4)))
        do {
            _ = try PasswordHasher.hash("my-secret-pw", parameters: Argon2idParameters(memoryKiB: 1, iterations: 1))
        } catch {
            XCTAssertFalse(String(describing: error).contains("my-secret-pw"))
        }
    }

    func testValidateRefusesWhatHashRefusesAndAcceptsTheRest() throws {
        let refused = [
            Argon2idParameters(memoryKiB: 1, iterations: 1),
            Argon2idParameters(memoryKiB: 64, iterations: 0),
            Argon2idParameters(memoryKiB: 64, iterations: 1, saltLength: 4),
            Argon2idParameters(memoryKiB: 64, iterations: 1, hashLength: 2),
            Argon2idParameters(memoryKiB: 64, iterations: 1, parallelism: 0),
            Argon2idParameters(memoryKiB: 16, iterations: 1, parallelism: 4),
        ]
        for parameters in refused {
            XCTAssertThrowsError(try PasswordHasher.validate(parameters), "\(parameters)")
            XCTAssertThrowsError(try PasswordHasher.hash("pw", parameters: parameters), "\(parameters)")
        }
        XCTAssertNoThrow(try PasswordHasher.validate(.default))
        XCTAssertNoThrow(try PasswordHasher.validate(Argon2idParameters(memoryKiB: 64, iterations: 3, parallelism: 2)))
    }

    func testDecoyPHCHasTheParametersShapeAndMatchesNoPassword() throws {
        let parameters = Argon2idParameters(memoryKiB: 64, iterations: 1)
        let decoy = PasswordHasher.decoyPHC(parameters: parameters)
        XCTAssertTrue(decoy.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$"), decoy)
        // Same shape as a real hash of these parameters: no rehash wanted, parses, verifies (false).
        XCTAssertFalse(PasswordHasher.needsRehash(phc: decoy, parameters: parameters))
        XCTAssertEqual(decoy.count, try PasswordHasher.hash("pw", parameters: parameters).count)
        XCTAssertFalse(PasswordHasher.verify("", phc: decoy))
        XCTAssertFalse(PasswordHasher.verify("pw", phc: decoy))
        XCTAssertNotEqual(PasswordHasher.decoyPHC(parameters: parameters), decoy)
        XCTAssertFalse(PasswordHasher.needsRehash(phc: PasswordHasher.decoyPHC()))
    }

    func testDummyVerifyIsFalseAndCostsLikeVerify() throws {
        XCTAssertFalse(PasswordHasher.dummyVerify("anything"))
        // The same work as verifying a stored hash (structural, not timed): the dummy runs
        // Argon2id with `Argon2idParameters.default`, the parameters every new hash carries.
        let phc = try PasswordHasher.hash("pw")
        let d = Argon2idParameters.default
        XCTAssertTrue(phc.hasPrefix("$argon2id$v=19$m=\(d.memoryKiB),t=\(d.iterations),p=\(d.parallelism)$"), phc)
    }
}
