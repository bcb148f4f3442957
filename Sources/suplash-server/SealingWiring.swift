import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashLogging

/// Secrets sealed at rest (docs/apple.md, "Sealed secrets"): the keyring from
/// `security.sealingKeyFile` / `security.olderSealingKeyFiles`, the start-up check that every
/// stored envelope's key is configured, and `suplash-server reseal`.
enum SealingWiring {
    /// The configured keyring, or nil when `security.sealingKeyFile` is empty.
    /// - Throws: `Settings.LoadError` naming the refused file and the fix (`SealingKeyFileError`),
    ///   or when older key files are listed without a current one.
    static func keyring(_ settings: Settings) throws -> SealingKeyring? {
        let current = settings.security.sealingKeyFile
        guard !current.isEmpty else {
            if !settings.security.olderSealingKeyFiles.isEmpty {
                throw Settings.LoadError(
                    description: "security.olderSealingKeyFiles needs security.sealingKeyFile (the current key)")
            }
            return nil
        }
        do {
            return try SealingKeyring.load(currentFile: current, olderFiles: settings.security.olderSealingKeyFiles)
        } catch {
            throw Settings.LoadError(description: "security.sealingKeyFile: \(error)")
        }
    }

    /// Refuses (65) when the database holds envelopes whose key is not configured: never
    /// generates a replacement (the values would be lost for good).
    /// - Throws: `StartupRefusal` naming the missing key ids, or the store's error.
    static func checkKeys(_ keyring: SealingKeyring?, store: any SealedValueRepository) throws {
        let stored = try store.sealedKeyIDs()
        let missing = stored.subtracting(keyring?.keyIDs ?? []).sorted()
        guard !missing.isEmpty else { return }
        let which = missing.joined(separator: ", ")
        throw StartupRefusal(
            description: keyring == nil
                ? "the database holds values sealed with key \(which) but security.sealingKeyFile is not set: "
                    + "configure the key file they were sealed with (docs/apple.md, \"Sealed secrets\"), then start again"
                : "the database holds values sealed with key \(which), which is neither security.sealingKeyFile "
                    + "nor one of security.olderSealingKeyFiles: add the file of that key (a replacement is never "
                    + "generated), then start again",
            exitCode: ExitCode.dataError)
    }

    /// At start-up: seals the device tokens stored in plaintext before tokens were sealed
    /// (without a key: deletes them, no token is kept), then compacts the database; logs
    /// `device_tokens_sealed` with the counts (never a token).
    /// - Throws: the store's error, or `SealingError`.
    static func sealStoredDeviceTokens(_ keyring: SealingKeyring?, store: any SealedValueRepository, logger: Logger) throws {
        let outcome = try PushTokenSealing.sealStoredPlaintext(keyring: keyring, store: store)
        guard outcome.sealed + outcome.dropped > 0 else { return }
        logger.info("device_tokens_sealed", .number("sealed", outcome.sealed), .number("dropped", outcome.dropped))
    }

    /// `suplash-server reseal`: seals every value under an older key again with the current
    /// key (compare-and-set per row, so a concurrent change wins). Returns (resealed, total).
    /// - Throws: `StartupRefusal` without a keyring or for a value that does not open, or the
    ///   store's error.
    static func reseal(_ keyring: SealingKeyring?, store: any SealedValueRepository) throws -> (resealed: Int, total: Int) {
        guard let keyring else {
            throw StartupRefusal(
                description: "reseal needs security.sealingKeyFile (the new key) and security.olderSealingKeyFiles",
                exitCode: ExitCode.usage)
        }
        try checkKeys(keyring, store: store)
        let values = try store.sealedValues()
        var resealed = 0
        for value in values {
            let context = SealingContext(table: value.contextTable, column: value.contextColumn, rowID: value.contextRowID)
            do {
                guard try keyring.needsReseal(value.envelope) else { continue }
                var envelope: String
                var blindIndex: String?
                if value.contextTable == DeviceTokenSealing.table {
                    // A device token also gets its blind index under the new key.
                    let hex = try keyring.openText(value.envelope, context: context)
                    envelope = try keyring.seal(hex, context: context)
                    blindIndex = try keyring.blindIndex(apnsDeviceToken: hex)
                } else {
                    envelope = try keyring.reseal(value.envelope, context: context)
                }
                if try store.replaceSealedValue(value, with: envelope, blindIndex: blindIndex) {
                    resealed += 1
                }
            } catch let error as SealingError {
                throw StartupRefusal(
                    description: "a sealed value in \(value.table) does not open (\(error)): restore it from a backup "
                        + "or remove the row, then run reseal again", exitCode: ExitCode.dataError)
            }
        }
        return (resealed, values.count)
    }
}
