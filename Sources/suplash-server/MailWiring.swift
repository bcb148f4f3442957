import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashLogging

/// Wires email codes, the outbox worker and Sign in with Apple from the `mail.*` and
/// `apple.*` configuration keys (docs/operations.md, "Mail" and "Sign in with Apple").
enum MailWiring {
    /// Sets `services.mail`, `services.apple` and `services.appleIdentities`; returns the
    /// delivery worker (not started).
    /// - Throws: `Settings.LoadError` for an unusable Resend URL or a missing key.
    static func install(
        into services: inout Services, settings: Settings, dataDir: String, store: any SuplashStore,
        secret: [UInt8], logger: Logger
    ) throws -> OutboxWorker {
        let from = settings.mail.from
        let transport: any MailTransport
        switch settings.mail.transport {
        case .file:
            transport = FileMailTransport(directory: dataDir + "/mail", from: from)
        case .resend:
            let key = settings.mail.resendApiKey
            guard !key.isEmpty else {
                throw Settings.LoadError(description: "mail.resendApiKey is required when mail.transport is resend")
            }
            guard let resend = ResendTransport(baseURL: settings.mail.resendURL, apiKey: key, from: from) else {
                throw Settings.LoadError(description: "mail.resendURL must be an http(s) URL")
            }
            transport = resend
        }
        let worker = OutboxWorker(repository: store, transport: transport, logger: logger)
        let codeKey = HMACSHA256.authenticationCode(key: secret, message: Array("suplash email codes v1".utf8))
        services.mail = EmailCodes(
            repository: store, key: codeKey, logger: logger, wake: { worker.wake() },
            awaitAttempt: { worker.waitForAttempt(id: $0, timeoutSeconds: $1) })

        services.apple = AppleSignIn(keySet: AppleKeySet(source: settings.apple.jwksURL), audiences: Set(settings.apple.audiences))
        services.appleIdentities = store
        services.metrics.gauge("suplash_outbox_backlog", help: "Mail messages waiting for delivery.") {
            Double((try? store.pendingCount()) ?? 0)
        }
        return worker
    }
}
