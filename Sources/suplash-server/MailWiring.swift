import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashLogging

/// Wires email codes, the outbox worker and Sign in with Apple from the `mail.*` and
/// `apple.*` configuration keys (docs/operations.md, "Mail" and "Sign in with Apple").
enum MailWiring {
    /// Sets `services.mail`, `services.apple` and `services.appleIdentities`; returns the
    /// delivery worker (not started).
    /// - Throws: `Configuration.LoadError` for an unknown transport or an unusable Resend URL/key.
    static func install(into services: inout Services, configuration: Configuration, dataDir: String, store: any SuplashStore,
                        secret: [UInt8], logger: Logger) throws -> OutboxWorker {
        let from = configuration.string("mail.from")
        let transport: any MailTransport
        switch configuration.string("mail.transport") {
        case "file":
            transport = FileMailTransport(directory: dataDir + "/mail", from: from)
        case "resend":
            let key = configuration.string("mail.resendApiKey")
            guard !key.isEmpty else {
                throw Configuration.LoadError(description: "mail.resendApiKey is required when mail.transport is resend")
            }
            guard let resend = ResendTransport(baseURL: configuration.string("mail.resendURL"), apiKey: key, from: from) else {
                throw Configuration.LoadError(description: "mail.resendURL must be an http(s) URL")
            }
            transport = resend
        default:
            throw Configuration.LoadError(description: "mail.transport must be file or resend")
        }
        let worker = OutboxWorker(repository: store, transport: transport, logger: logger)
        let codeKey = HMACSHA256.authenticationCode(key: secret, message: Array("suplash email codes v1".utf8))
        services.mail = EmailCodes(repository: store, key: codeKey, logger: logger, wake: { worker.wake() },
                                   awaitAttempt: { worker.waitForAttempt(id: $0, timeoutSeconds: $1) })

        let audiences = Set(configuration.string("apple.audiences").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        services.apple = AppleSignIn(keySet: AppleKeySet(source: configuration.string("apple.jwksURL")), audiences: audiences)
        services.appleIdentities = store
        services.metrics.gauge("suplash_outbox_backlog", help: "Mail messages waiting for delivery.") {
            Double((try? store.pendingCount()) ?? 0)
        }
        return worker
    }
}
