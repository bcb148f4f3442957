import SuplashAPI
import SuplashCrypto
import SuplashDomain

/// The sealing key of the store tests: push tokens are stored sealed (docs/apple.md, "Sealed
/// secrets"), as the device route seals them.
enum TestSealing {
    /// The key's 32 bytes.
    static let keyBytes: [UInt8] = (0..<32).map { UInt8($0) &* 7 &+ 3 }
    static let keyring: SealingKeyring = {
        guard let key = SealingKey(bytes: keyBytes), let ring = SealingKeyring(current: key) else {
            preconditionFailure("a 32-byte key makes a keyring")
        }
        return ring
    }()

    /// The plaintext (lower-case hex) of a claimed push's token.
    static func token(_ push: ClaimedPush) -> [UInt8]? {
        guard let hex = try? PushTokenSealing.open(push, keyring: keyring) else { return nil }
        var out: [UInt8] = []
        var chars = Array(hex.utf8)[...]
        while chars.count >= 2, let byte = UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) {
            out.append(byte)
            chars = chars.dropFirst(2)
        }
        return out
    }
}

extension DeviceRepository {
    /// `registerDevice` with `registration.tokens` sealed under `TestSealing.keyring`, as the
    /// device route does.
    func registerDevice(
        userID: String, deviceID: String, sessionID: String?, registration: DeviceRegistration, now: Int64
    ) throws -> DeviceRegisterOutcome {
        try registerDevice(
            userID: userID, deviceID: deviceID, sessionID: sessionID, registration: registration,
            tokens: PushTokenSealing.seal(registration.tokens, userID: userID, deviceID: deviceID, keyring: TestSealing.keyring),
            now: now)
    }
}
