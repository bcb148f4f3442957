import Foundation
import SuplashCrypto
import SuplashDomain
import SuplashLogging

/// Limits of emailed codes (spec §3: six digits, 10 minutes, 5 attempts, one resend per 60 s).
public struct EmailCodePolicy: Sendable {
    /// Lifetime of a code, ms (default 10 minutes).
    public var validityMs: Int64 = 10 * 60_000
    /// Wrong presentations before the code is void (default 5).
    public var maxAttempts = 5
    /// Minimum time between two codes of one purpose for one user, ms (default 60 s).
    public var resendIntervalMs: Int64 = 60_000

    /// The spec §3 defaults.
    public init() {}
}

/// Issues and checks emailed codes. Codes are six random digits (uniform, from the CSPRNG);
/// only `HMAC-SHA-256(key, purpose "|" userID "|" code)` is stored and compared in constant
/// time. Each code and its message are committed together into the outbox; the delivery
/// worker is woken after the commit.
public final class EmailCodes: Sendable {
    let repository: any EmailCodeRepository
    let key: [UInt8]
    /// The code limits in force.
    public let policy: EmailCodePolicy
    let wake: @Sendable () -> Void
    let awaitAttempt: @Sendable (_ messageID: String, _ timeoutSeconds: Double) -> Void
    let logger: Logger
    /// Serial queue for `/password/forgot` work, so its response never waits on the account.
    private let background = DispatchQueue(label: "suplash.mail.forgot")

    /// - Parameters:
    ///   - key: the MAC key (≥ 32 bytes; derived from the server secret).
    ///   - wake: called after a message was committed (wakes the delivery worker).
    ///   - awaitAttempt: blocks until the worker attempted message `id` or the timeout (seconds)
    ///     passed (`OutboxWorker.waitForAttempt`).
    public init(
        repository: any EmailCodeRepository, key: [UInt8], policy: EmailCodePolicy = EmailCodePolicy(),
        logger: Logger, wake: @escaping @Sendable () -> Void,
        awaitAttempt: @escaping @Sendable (String, Double) -> Void = { _, _ in }
    ) {
        self.repository = repository
        self.key = key
        self.policy = policy
        self.logger = logger
        self.wake = wake
        self.awaitAttempt = awaitAttempt
    }

    /// How long signup waits for the first delivery attempt of its verification mail, seconds.
    public static let signUpDeliveryWait = 2.0

    /// Six uniformly random decimal digits (rejection sampling, no modulo bias).
    public static func generateCode() -> String {
        while true {
            let b = SecureRandom.bytes(4)
            let n = UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
            // 4_294_000_000 is the largest multiple of 10^6 not above UInt32.max.
            if n < 4_294_000_000 {
                let digits = String(n % 1_000_000)
                return String(repeating: "0", count: 6 - digits.count) + digits
            }
        }
    }

    /// True when `code` is exactly six ASCII digits.
    public static func isWellFormed(_ code: String) -> Bool {
        code.utf8.count == 6 && code.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// The stored MAC of `code` for `userID` and `purpose` (32 bytes).
    public func hash(code: String, userID: String, purpose: EmailCodePurpose) -> [UInt8] {
        HMACSHA256.authenticationCode(key: key, message: Array("\(purpose.rawValue)|\(userID)|\(code)".utf8))
    }

    /// Code row and outbox message for `user`.
    func make(user: UserProfile, purpose: EmailCodePurpose, now: Int64) -> (NewEmailCode, OutboxMessage) {
        let code = Self.generateCode()
        let (subject, text) = MailTemplates.message(
            purpose: purpose, code: code, locale: user.locale,
            validMinutes: Int(policy.validityMs / 60_000))
        let stored = NewEmailCode(
            userID: user.id, purpose: purpose, codeHash: hash(code: code, userID: user.id, purpose: purpose),
            createdAt: now, expiresAt: now + policy.validityMs)
        let message = OutboxMessage(
            id: UUIDText.version7(unixMillis: now, random: SecureRandom.bytes(10)),
            recipient: user.email, subject: subject, text: text, createdAt: now)
        return (stored, message)
    }

    /// Issues a code of `purpose` for `user` (same transaction as its outbox message).
    /// - Returns: `.issued`, or `.tooSoon` within the resend interval.
    /// - Throws: `RepositoryError`.
    public func issue(for user: UserProfile, purpose: EmailCodePurpose, now: Int64) throws -> CodeIssueOutcome {
        let (code, message) = make(user: user, purpose: purpose, now: now)
        let outcome = try repository.issueCode(code, message: message, minIntervalMs: policy.resendIntervalMs)
        if outcome == .issued { wake() }
        return outcome
    }

    /// Signup's verification mail. After the commit it waits (at most `signUpDeliveryWait`)
    /// for the worker's first attempt, so the mail is normally on its way when the 201 is
    /// sent; delivery itself stays with the worker (retries, one send per message).
    /// Failures are logged (error type only), not thrown: the account exists either way and
    /// `/email/resend` can send another code.
    public func sendVerificationAfterSignUp(_ user: UserProfile, now: Int64) {
        do {
            let (code, message) = make(user: user, purpose: .verifyEmail, now: now)
            if try repository.issueCode(code, message: message, minIntervalMs: policy.resendIntervalMs) == .issued {
                wake()
                awaitAttempt(message.id, Self.signUpDeliveryWait)
            }
        } catch {
            logger.warning("verification_mail_not_queued", .errorType(String(reflecting: type(of: error))))
        }
    }

    /// `/password/forgot`: runs on a background queue and returns at once, so the caller's
    /// response (always 202) takes the same path whether or not the account exists.
    public func requestPasswordReset(email: String, now: Int64) {
        background.async { [self] in
            do {
                let outcome = try repository.issueCode(
                    email: email, purpose: .resetPassword, now: now, minIntervalMs: policy.resendIntervalMs
                ) { [self] user in make(user: user.profile, purpose: .resetPassword, now: now) }
                if outcome == .issued { wake() }
            } catch {
                logger.warning("reset_mail_not_queued", .errorType(String(reflecting: type(of: error))))
            }
        }
    }

    /// Waits until earlier `requestPasswordReset` work has run (tests, shutdown).
    public func drainBackgroundWork() {
        background.sync {}
    }

    /// Presents `code` for `userID`: compared in constant time with the stored MAC inside the
    /// write transaction that counts the attempt or applies `redemption`.
    /// - Throws: `RepositoryError`.
    public func redeem(
        userID: String, purpose: EmailCodePurpose, code: String, now: Int64,
        redemption: CodeRedemption
    ) throws -> CodeCheckOutcome {
        let presented = hash(code: code, userID: userID, purpose: purpose)
        return try repository.redeemCode(
            userID: userID, purpose: purpose, now: now, maxAttempts: policy.maxAttempts,
            matches: { constantTimeEquals($0, presented) }, redemption: redemption)
    }
}
