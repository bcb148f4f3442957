import Foundation
import SuplashCrypto
import SuplashDomain
import SuplashJSON

/// Everything the handlers need, wired by the executable.
public struct Services: Sendable {
    public var users: any UserRepository
    public var sessions: any SessionRepository
    public var entries: any WaterEntryRepository
    public var tokens: TokenService
    public var revocations: RevocationView
    public var authenticator: Authenticator
    public var pageTokens: PageTokenCodec
    public var passwordHashing: PasswordHashing
    public var timeZones: TimeZoneDatabase
    /// Hydration, bills and account data (spec §4, §6).
    public var domain: DomainServices
    /// True when storage answers and every migration is applied (`/readyz`).
    public var readiness: @Sendable () -> Bool
    public var operations: any OperationsRepository
    public var rateLimits: RateLimits
    public var metrics: Metrics
    /// Folder for `POST /v1/admin/backup` snapshots.
    public var backupDirectory: String
    /// Offline sync (spec §5): change feed, push, long polls, Idempotency-Key, batch import.
    public var sync: SyncServices?
    /// Email codes through the transactional mail outbox (spec §3); nil = the email routes answer 503.
    public var mail: EmailCodes? = nil
    /// Sign in with Apple token verification; nil = `/v1/auth/apple` answers 503.
    public var apple: AppleSignIn? = nil
    /// Apple `sub` → user links.
    public var appleIdentities: (any AppleIdentityRepository)? = nil
    /// The authorization-code exchange of `POST /v1/auth/apple`; nil = a code is not exchanged
    /// (the sign-in goes on without a refresh token, logged at warning).
    public var appleCodeExchange: AppleCodeExchange? = nil
    /// Wakes the Apple revoke thread after an erasure queued a job (nil: none runs).
    public var appleRevokeWake: (@Sendable () -> Void)? = nil
    /// Apple's account events (`POST /v1/apple/notifications`); nil = 503.
    public var appleNotifications: AppleNotifications? = nil
    /// The device registry of push delivery (spec §9); nil = the device routes answer 503.
    public var devices: DeviceRegistry? = nil
    /// Smart reminders (spec §9 "Reminders"); nil = the reminder routes answer 503 and the
    /// export's `reminders` is empty.
    public var reminders: (any ReminderRepository)? = nil
    /// Admin campaigns (spec §8 `…/admin/notifications`); nil = those routes answer 503.
    public var campaigns: (any CampaignRepository)? = nil
    /// Counters of reminder events for `/metrics`; nil = not counted.
    public var reminderCounters: ReminderCounters? = nil
    /// The push sender's state for the `/readyz` body (`push`: "off: …", "sending", "paused: …");
    /// nil = not reported.
    public var pushStatus: (@Sendable () -> String)? = nil
    /// The OpenAPI 3.1 document served at `GET /openapi.json` (`docs/openapi.json`, read at start).
    public var openAPIDocument: [UInt8]
    /// Storage health fed by the stores' classified failures and the write probe; `/readyz`
    /// answers 503 with its problem. nil = not monitored (tests).
    public var storageHealth: StorageHealth? = nil

    public init(
        users: any UserRepository, sessions: any SessionRepository, entries: any WaterEntryRepository,
        tokens: TokenService, revocations: RevocationView, authenticator: Authenticator,
        pageTokens: PageTokenCodec, passwordHashing: PasswordHashing, timeZones: TimeZoneDatabase,
        domain: DomainServices, readiness: @escaping @Sendable () -> Bool, operations: any OperationsRepository,
        rateLimits: RateLimits, metrics: Metrics, backupDirectory: String, sync: SyncServices? = nil,
        openAPIDocument: [UInt8] = []
    ) {
        self.users = users
        self.sessions = sessions
        self.entries = entries
        self.tokens = tokens
        self.revocations = revocations
        self.authenticator = authenticator
        self.pageTokens = pageTokens
        self.passwordHashing = passwordHashing
        self.timeZones = timeZones
        self.domain = domain
        self.readiness = readiness
        self.operations = operations
        self.rateLimits = rateLimits
        self.metrics = metrics
        self.backupDirectory = backupDirectory
        self.sync = sync
        self.openAPIDocument = openAPIDocument
    }

    /// A new UUIDv7 (RFC 9562) for server-generated ids.
    public func newID(now: Int64) -> String {
        UUIDText.version7(unixMillis: now, random: SecureRandom.bytes(10))
    }
}

/// Argon2id hashing with bounded concurrency: each hash takes `memoryKiB` of memory
/// and a core for tens of milliseconds, so at most `concurrency` run at once.
public final class PasswordHashing: Sendable {
    public let parameters: Argon2idParameters
    private let slots: DispatchSemaphore
    /// A PHC string of a random password, verified against when the email is unknown
    /// so that both failure paths cost the same (spec §3).
    private let dummyPHC: String

    /// The decoy is built without hashing (`PasswordHasher.decoyPHC`): hashing one at start
    /// cost a full Argon2id run — `memoryKiB` of peak memory and tens of ms of start-up.
    /// - Throws: when libargon2 rejects the parameters (`PasswordHasher.validate`).
    public init(parameters: Argon2idParameters, concurrency: Int) throws {
        try PasswordHasher.validate(parameters)
        self.parameters = parameters
        self.slots = DispatchSemaphore(value: max(1, concurrency))
        self.dummyPHC = PasswordHasher.decoyPHC(parameters: parameters)
    }

    /// The PHC string of `password` (already NFKC-normalised).
    public func hash(_ password: String) throws -> String {
        slots.wait()
        defer { slots.signal() }
        return try PasswordHasher.hash(password, parameters: parameters)
    }

    /// Verifies `password` against `phc`; with nil, burns the same time and returns false.
    public func verify(_ password: String, phc: String?) -> Bool {
        slots.wait()
        defer { slots.signal() }
        guard let phc else {
            _ = PasswordHasher.verify(password, phc: dummyPHC)
            return false
        }
        return PasswordHasher.verify(password, phc: phc)
    }
}

/// IANA time-zone ids known to the system tz database (`/usr/share/zoneinfo`, package
/// tzdata). `TimeZone(identifier:)` alone also accepts non-IANA ids such as `GMT+3`,
/// so the id must name a TZif file there as well (design notes, "Time").
public final class TimeZoneDatabase: @unchecked Sendable {
    private let directory: String
    // Guarded by `lock`.
    /// Answers by id, keyed by code points: with `String` keys, a cached `Europe/Kiev` would
    /// also answer for `Europe/\u{212A}iev` (KELVIN SIGN), which names no file (spec §1).
    private var known: [CodePointKey: Bool] = [:]
    private let lock = NSLock()

    public init(directory: String = "/usr/share/zoneinfo") {
        self.directory = directory
    }

    /// True for ids such as `Europe/Istanbul`, `Europe/Kiev`, `UTC`; false for `Mars/Olympus`, `GMT+3`, `../x`.
    public func isKnown(_ id: String) -> Bool {
        if let cached = lock.withLock({ known[CodePointKey(id)] }) { return cached }
        let result = Self.check(id, directory: directory)
        lock.withLock {
            if known.count < 4096 { known[CodePointKey(id)] = result }
        }
        return result
    }

    private static func check(_ id: String, directory: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 64, !id.hasPrefix("/"), !id.contains(".."),
            id.utf8.allSatisfy({ c in
                (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c)
                    || c == 0x2F || c == 0x5F || c == 0x2D || c == 0x2B
            }),
            !id.hasPrefix("posix/"), !id.hasPrefix("right/"), id != "posixrules", id != "localtime", id != "Factory"
        else { return false }
        guard let handle = FileHandle(forReadingAtPath: directory + "/" + id) else { return false }
        defer { try? handle.close() }
        guard let magic = try? handle.read(upToCount: 4), Array(magic) == Array("TZif".utf8) else { return false }
        return TimeZone(identifier: id) != nil
    }
}
