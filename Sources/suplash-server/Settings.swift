import Foundation
import SuplashJSON
import SuplashLogging

/// Server settings (docs/configuration.md): typed fields in groups named like the key
/// sections (`settings.storage.readers` is `storage.readers`). `Settings()` holds the built-in
/// defaults, which `config/suplash.json` mirrors (a test checks that they agree).
///
/// `Settings.fields` is the one place key strings appear: it names each field's key, flag
/// and meaning, and drives loading (`load`), `suplash-server config` (`rendered`) and the
/// key table of docs/configuration.md (`markdownTable`, `suplash-server config --markdown`).
struct Settings: Sendable, Equatable {
    /// `server.*`: the listener, its threads and limits, and the data dir.
    struct Server: Sendable, Equatable {
        var host = "127.0.0.1"
        var port = 8080
        var dataDir = "./data"
        var eventLoops = 0
        var workerThreads = 0
        var writeWorkerThreads = 0
        var connectionCap = 16_384
        var maxConnectionsPerAddress = 4096
        var connectionMemoryBudgetBytes = 262_144
        var headerReadTimeoutSeconds = 10
        var keepAliveIdleSeconds = 60
        var maxBodyBytes = 1_048_576
        var batchMaxBodyBytes = 4_194_304
        var shutdownGraceSeconds = 10
        var trustedProxies: [String] = []
        var backupDir = ""
        var corsOrigins: [String] = []
        var openapiPath = ""
    }

    /// `storage.*`: which database and how it is opened.
    struct Storage: Sendable, Equatable {
        /// `storage.driver`.
        enum Driver: String, SettingChoice {
            case sqlite, postgres
        }

        var driver = Driver.sqlite
        var sqlitePath = ""
        var migrationsDir = ""
        var readers = 4
        var busyTimeoutMs = 5000
        var writerCacheKib = 4000
        var readerCacheKib = 2000
        var writeProbeIntervalSeconds = 5
        var postgresUrl = ""
        var postgresPoolSize = 16
        var postgresMigrationsDir = ""
    }

    /// `auth.*`: tokens and password hashing.
    struct Auth: Sendable, Equatable {
        var jwtSecret = ""
        var accessTokenTtlSeconds = 3600
        var refreshTokenTtlSeconds = 2_592_000
        var argon2MemoryKib = 12_288
        var argon2Iterations = 3
        var argon2Parallelism = 1
        var hashingConcurrency = 0
    }

    /// `ratelimit.*`: the token-bucket layers.
    struct RateLimit: Sendable, Equatable {
        /// `ratelimit.store`: where the buckets live.
        enum Store: String, SettingChoice {
            case auto, memory, database
        }

        var enabled = true
        var authPerIpPerHour = 120
        var ipPerMinute = 1200
        var devicePerMinute = 300
        var userPerMinute = 600
        var loginFailuresPerAccountPer15Minutes = 10
        var store = Store.auto
    }

    /// `billing.*`.
    struct Billing: Sendable, Equatable {
        var tariffsDir = ""
    }

    /// `reminders.*`.
    struct Reminders: Sendable, Equatable {
        var messagesDir = ""
        var schedulerEnabled = true
        var pollIntervalMs = 1000
        var batchSize = 200
        var historyDays = 90
    }

    /// `sync.*`: tombstone retention and the maintenance job.
    struct Sync: Sendable, Equatable {
        var tombstoneRetentionDays = 90
        var maintenanceIntervalSeconds = 3600
    }

    /// `mail.*`: how email codes are delivered.
    struct Mail: Sendable, Equatable {
        /// `mail.transport`.
        enum Transport: String, SettingChoice {
            case file, resend
        }

        var transport = Transport.file
        var resendURL = "https://api.resend.com"
        var resendApiKey = ""
        var from = "Suplash <no-reply@suplash.app>"
    }

    /// `apple.*`: Sign in with Apple.
    struct Apple: Sendable, Equatable {
        var jwksURL = "https://appleid.apple.com/auth/keys"
        var audiences: [String] = []
        var teamID = ""
        var keyID = ""
        var privateKeyFile = ""
        var tokenURL = "https://appleid.apple.com/auth/token"
        var revokeURL = "https://appleid.apple.com/auth/revoke"
        var caFile = ""
        var clientSecretLifetimeSeconds = 86_400
        var revokeMaxAttempts = 12
        var revokeRetryBaseSeconds = 60
        var configurationPauseSeconds = 60
    }

    /// `security.*`: secrets sealed at rest (docs/apple.md, "Sealed secrets").
    struct Security: Sendable, Equatable {
        var sealingKeyFile = ""
        var olderSealingKeyFiles: [String] = []
    }

    /// `apns.*`: push delivery to Apple devices (docs/push.md).
    struct APNs: Sendable, Equatable {
        var bundleIds: [String] = []
        var keyFile = ""
        var keyId = ""
        var teamId = ""
        var productionURL = "https://api.push.apple.com"
        var sandboxURL = "https://api.sandbox.push.apple.com"
        var caFile = ""
        var maxConcurrentPushes = 100
        var backgroundWindowSeconds = 300
        var widgetPushesPerDay = 40  // ProgressPushRules.widgetsPerDay
        var pollIntervalMs = 1000
    }

    /// `log.*`.
    struct Log: Sendable, Equatable {
        var level = LogLevel.info
    }

    var server = Server()
    var storage = Storage()
    var auth = Auth()
    var ratelimit = RateLimit()
    var billing = Billing()
    var reminders = Reminders()
    var sync = Sync()
    var mail = Mail()
    var apple = Apple()
    var security = Security()
    var apns = APNs()
    var log = Log()

    /// The SQLite database file: `storage.sqlitePath`, else `<server.dataDir>/suplash.sqlite`.
    var sqliteDatabasePath: String {
        storage.sqlitePath.isEmpty ? server.dataDir + "/suplash.sqlite" : storage.sqlitePath
    }

    /// Errors while loading; messages name keys and files, never values.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    /// Every key in the order `config` prints them: key, field, flag (without `--`), meaning
    /// for docs/configuration.md (with units), and the default as the docs show it when the
    /// built-in value alone would mislead.
    static var fields: [Field] {
        [
            Field("server.host", \.server.host, flag: "host", "bind address"),
            Field("server.port", \.server.port, flag: "port", "TCP port; 0 = any free port"),
            Field("server.dataDir", \.server.dataDir, flag: "data-dir", "database, JWT secret, backups"),
            Field("server.eventLoops", \.server.eventLoops, note: "(= cores)", "epoll loop threads"),
            Field(
                "server.workerThreads", \.server.workerThreads, note: "(= 4 × cores, ≥ 8)",
                "handler threads for `GET`/`HEAD`/`OPTIONS`"),
            Field(
                "server.writeWorkerThreads", \.server.writeWorkerThreads, note: "(= 16 × cores, ≥ 32)",
                "handler threads for the other methods; a write holds one until its group commit is fsync'd, "
                    + "so this bounds the jobs per commit"),
            Field(
                "server.connectionCap", \.server.connectionCap,
                "open connections, all loops; at the cap the oldest idle keep-alive connection is closed for a "
                    + "waiting client, with none idle new clients wait in the backlog ([http](http.md))"),
            Field(
                "server.maxConnectionsPerAddress", \.server.maxConnectionsPerAddress,
                "open connections from one client address; more are closed at once (addresses in "
                    + "`server.trustedProxies` are exempt)"),
            Field(
                "server.connectionMemoryBudgetBytes", \.server.connectionMemoryBudgetBytes,
                "bytes one connection may hold (requests read, answers not taken) before the engine stops reading "
                    + "it and starts none of its further requests"),
            Field(
                "server.headerReadTimeoutSeconds", \.server.headerReadTimeoutSeconds,
                "seconds to receive a request's head; 408 after"),
            Field(
                "server.keepAliveIdleSeconds", \.server.keepAliveIdleSeconds,
                "seconds an idle keep-alive connection stays open"),
            Field("server.maxBodyBytes", \.server.maxBodyBytes, "request body bound in bytes; 413 past it"),
            Field(
                "server.batchMaxBodyBytes", \.server.batchMaxBodyBytes,
                "request body bound in bytes for the batch and sync routes"),
            Field(
                "server.shutdownGraceSeconds", \.server.shutdownGraceSeconds,
                "seconds SIGTERM waits for requests in flight (drain bound)"),
            Field(
                "server.trustedProxies", \.server.trustedProxies,
                "comma-separated proxy IPs whose `X-Forwarded-For` is believed"),
            Field(
                "server.backupDir", \.server.backupDir, shown: "`<dataDir>/backups`",
                "where `POST /v1/admin/backup` writes"),
            Field(
                "server.corsOrigins", \.server.corsOrigins,
                "comma-separated exact browser origins (`https://app.example.com`) allowed by CORS; empty = CORS off "
                    + "(see [operations](operations.md#cors))"),
            Field(
                "server.openapiPath", \.server.openapiPath, shown: "found upward",
                "`docs/openapi.json`, served at `GET /openapi.json`"),
            Field(
                "storage.driver", \.storage.driver,
                "`sqlite`, or `postgres` (any number of instances on one database; see [PostgreSQL](postgresql.md))"),
            Field("storage.sqlitePath", \.storage.sqlitePath, shown: "`<dataDir>/suplash.sqlite`", "database file"),
            Field("storage.migrationsDir", \.storage.migrationsDir, shown: "found upward", "`Migrations/sqlite`"),
            Field("storage.readers", \.storage.readers, "SQLite read-only connections"),
            Field("storage.busyTimeoutMs", \.storage.busyTimeoutMs, "milliseconds SQLite waits for a lock (busy timeout)"),
            Field(
                "storage.writerCacheKib", \.storage.writerCacheKib,
                "the writer connection's SQLite page cache bound, KiB (`cache_size`)"),
            Field("storage.readerCacheKib", \.storage.readerCacheKib, "each reader connection's SQLite page cache bound, KiB"),
            Field(
                "storage.writeProbeIntervalSeconds", \.storage.writeProbeIntervalSeconds,
                "seconds between storage write probes behind `/readyz` "
                    + "([operations](operations.md#readiness-and-the-write-probe)); 0 = off"),
            Field(
                "storage.postgresUrl", \.storage.postgresUrl,
                "libpq URL when `storage.driver` is `postgres` (Unix socket or loopback; keep passwords in "
                    + "`~/.pgpass`, not in the URL)"),
            Field("storage.postgresPoolSize", \.storage.postgresPoolSize, "most PostgreSQL connections per instance"),
            Field(
                "storage.postgresMigrationsDir", \.storage.postgresMigrationsDir, shown: "found upward",
                "`Migrations/postgres`"),
            Field(
                "auth.jwtSecret", \.auth.jwtSecret, secret: true, shown: "generated",
                "≥ 32 bytes (base64url or text); else `<dataDir>/jwt-secret`, made on first start, mode 0600 "
                    + "(shown as `(set)` by `config`)"),
            Field("auth.accessTokenTtlSeconds", \.auth.accessTokenTtlSeconds, "access token lifetime, seconds"),
            Field("auth.refreshTokenTtlSeconds", \.auth.refreshTokenTtlSeconds, "refresh token lifetime, seconds"),
            Field("auth.argon2MemoryKib", \.auth.argon2MemoryKib, "Argon2id memory m, KiB (OWASP: 12 MiB × 3 passes defends like 19 MiB × 2)"),
            Field("auth.argon2Iterations", \.auth.argon2Iterations, "Argon2id iterations t"),
            Field("auth.argon2Parallelism", \.auth.argon2Parallelism, "Argon2id lanes p"),
            Field("auth.hashingConcurrency", \.auth.hashingConcurrency, note: "(= cores)", "password hashes at once"),
            Field("ratelimit.enabled", \.ratelimit.enabled, "all layers on/off (benchmarks turn them off)"),
            Field(
                "ratelimit.authPerIpPerHour", \.ratelimit.authPerIpPerHour,
                "requests per hour to `/v1/auth/*` per client address"),
            Field("ratelimit.ipPerMinute", \.ratelimit.ipPerMinute, "requests per minute to every route per client address"),
            Field("ratelimit.devicePerMinute", \.ratelimit.devicePerMinute, "requests per minute per `X-Device-ID`"),
            Field("ratelimit.userPerMinute", \.ratelimit.userPerMinute, "requests per minute per authenticated user"),
            Field(
                "ratelimit.loginFailuresPerAccountPer15Minutes", \.ratelimit.loginFailuresPerAccountPer15Minutes,
                "failed logins per email per 15 minutes"),
            Field(
                "ratelimit.store", \.ratelimit.store,
                "where token buckets live: `memory` (per process), `database` (PostgreSQL table "
                    + "`rate_limit_buckets`, shared by every instance; refused on SQLite), `auto` = `database` on "
                    + "PostgreSQL, `memory` on SQLite"),
            Field(
                "billing.tariffsDir", \.billing.tariffsDir, shown: "found upward",
                "`config/tariffs`: tariff JSON files ([format](hydration.md#tariffs))"),
            Field(
                "reminders.messagesDir", \.reminders.messagesDir, shown: "found upward",
                "`config/messages`: alert message catalogue, one JSON file per language ([reminders](reminders.md#messages))"),
            Field(
                "reminders.schedulerEnabled", \.reminders.schedulerEnabled,
                "run this instance's reminder scheduler (due reminders → push outbox; [reminders](reminders.md#scheduler))"),
            Field(
                "reminders.pollIntervalMs", \.reminders.pollIntervalMs,
                "how often the scheduler looks for due reminders when the last batch was not full, ms"),
            Field("reminders.batchSize", \.reminders.batchSize, "due reminders claimed per scheduler transaction"),
            Field(
                "reminders.historyDays", \.reminders.historyDays,
                "days ended hydration and bill reminders are kept (history, export); the scheduler deletes older ones "
                    + "hourly; 0 keeps them all ([reminders](reminders.md#history-retention))"),
            Field(
                "sync.tombstoneRetentionDays", \.sync.tombstoneRetentionDays,
                "days tombstones are kept; older ones are purged and older sync tokens get 410"),
            Field(
                "sync.maintenanceIntervalSeconds", \.sync.maintenanceIntervalSeconds,
                "seconds between runs of the purge job (tombstones, expired Idempotency-Key records); first run 1 s "
                    + "after start"),
            Field(
                "mail.transport", \.mail.transport,
                "`file` (`.eml` files under `<dataDir>/mail`) or `resend` ([mail](operations.md#mail-email-codes))"),
            Field("mail.resendURL", \.mail.resendURL, "Resend API base; mail is `POST {url}/emails`"),
            Field(
                "mail.resendApiKey", \.mail.resendApiKey, secret: true,
                "Resend API key (required for `resend`; shown as `(set)` by `config`)"),
            Field("mail.from", \.mail.from, "sender mailbox (a domain verified at Resend)"),
            Field("apple.jwksURL", \.apple.jwksURL, "Apple's key set: an http(s) URL, a `file://` URL or a path"),
            Field(
                "apple.audiences", \.apple.audiences,
                "comma-separated bundle ids / service ids accepted as `aud`; empty = every Apple token is refused "
                    + "([setup](operations.md#sign-in-with-apple))"),
            Field(
                "apple.teamID", \.apple.teamID,
                "Apple developer team id: `iss` of the client secret; with `apple.keyID` and `apple.privateKeyFile` it "
                    + "turns on the code exchange and token revocation ([apple](apple.md))"),
            Field("apple.keyID", \.apple.keyID, "the Sign in with Apple key's id (`kid` of the client secret)"),
            Field(
                "apple.privateKeyFile", \.apple.privateKeyFile,
                "the Sign in with Apple `.p8` key (PKCS#8 PEM, P-256), mode 0600"),
            Field("apple.tokenURL", \.apple.tokenURL, "Apple's token endpoint (authorization-code exchange); `https`"),
            Field("apple.revokeURL", \.apple.revokeURL, "Apple's revoke endpoint (revoke jobs); `https`"),
            Field(
                "apple.caFile", \.apple.caFile, shown: "system store",
                "PEM CA file trusted for `apple.tokenURL` / `apple.revokeURL` (tests point it at the mock's CA)"),
            Field(
                "apple.clientSecretLifetimeSeconds", \.apple.clientSecretLifetimeSeconds,
                "lifetime of the cached client secret, seconds (300 … 15,777,000)"),
            Field(
                "apple.revokeMaxAttempts", \.apple.revokeMaxAttempts,
                "attempts of one revoke job on 5xx / 429 / connection failures before it is given up"),
            Field(
                "apple.revokeRetryBaseSeconds", \.apple.revokeRetryBaseSeconds,
                "wait after a revoke job's first failed attempt, seconds; doubles per attempt up to 6 hours (jittered)"),
            Field(
                "apple.configurationPauseSeconds", \.apple.configurationPauseSeconds,
                "revoke jobs pause this long (seconds) after Apple refuses our client (`invalid_client` …); one warning "
                    + "per pause"),
            Field(
                "security.sealingKeyFile", \.security.sealingKeyFile,
                "file of 32 random bytes (mode 0600), the same on every instance: seals Apple refresh tokens and "
                    + "APNs device tokens ([apple](apple.md#sealed-secrets)); empty = the code exchange is off and no "
                    + "push token is kept; required with `apns.keyFile`; start-up refuses sealed data whose key is missing"),
            Field(
                "security.olderSealingKeyFiles", \.security.olderSealingKeyFiles,
                "comma-separated older sealing key files, read only (opening, `suplash-server reseal`)"),
            Field(
                "apns.bundleIds", \.apns.bundleIds,
                "comma-separated app bundle ids a device may register with (`PUT …/devices/{deviceId}`); empty = any "
                    + "well-formed bundle id ([push](push.md#device-registry))"),
            Field(
                "apns.keyFile", \.apns.keyFile,
                "path of the APNs `.p8` signing key (never logged); needs `security.sealingKeyFile`; empty = nothing "
                    + "is sent, devices still register and `/readyz` says so ([push](push.md#sender))"),
            Field("apns.keyId", \.apns.keyId, "the key's 10-character id (JWT `kid`)"),
            Field("apns.teamId", \.apns.teamId, "the developer team id (JWT `iss`)"),
            Field("apns.productionURL", \.apns.productionURL, "APNs production origin (tests: the mock)"),
            Field("apns.sandboxURL", \.apns.sandboxURL, "APNs sandbox origin (tests: the mock)"),
            Field("apns.caFile", \.apns.caFile, "PEM CA file for the APNs connection; empty = the system store"),
            Field(
                "apns.maxConcurrentPushes", \.apns.maxConcurrentPushes,
                "pushes in flight at once per instance (HTTP/2 streams over one connection per environment)"),
            Field(
                "apns.backgroundWindowSeconds", \.apns.backgroundWindowSeconds,
                "background refresh coalescing window per device: the first change is pushed at once, later ones "
                    + "at most once per window (and never more than 3 an hour)"),
            Field(
                "apns.widgetPushesPerDay", \.apns.widgetPushesPerDay,
                "widget pushes (`content-changed`) per device in any 24 hours; over it a device's widget waits or its "
                    + "push expires; 0 = none ([push](push.md#widgets-and-complications))"),
            Field("apns.pollIntervalMs", \.apns.pollIntervalMs, "how often the sender looks for due pushes, ms"),
            Field("log.level", \.log.level, "lowest level logged: `debug` `info` `warning` `error`"),
        ]
    }

    /// The flags (without `--`) that set a key.
    static var flagNames: Set<String> { Set(fields.compactMap(\.flag)) }

    /// Loads defaults, then `file` (when given, or `config/suplash.json` when it exists),
    /// then the environment (`SUPLASH_<SECTION>_<KEY>`), then `flags` (flag name without
    /// `--` → text).
    /// - Throws: `LoadError` for an unreadable file, an unknown key in it, or a value that
    ///   does not fit its key's type (the message names the key, never the value).
    static func load(file: String?, environment: [String: String], flags: [String: String]) throws -> Settings {
        var settings = Settings()
        let fields = Self.fields
        let path = file ?? (FileManager.default.fileExists(atPath: "config/suplash.json") ? "config/suplash.json" : nil)
        if let path {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw LoadError(description: "cannot read config file \(path)")
            }
            let root: JSONValue
            do { root = try JSONParser.parse(Array(data)) } catch {
                throw LoadError(description: "config file \(path) is not valid JSON (\(error))")
            }
            guard case .object(let sections) = root else { throw LoadError(description: "config file \(path) must hold an object") }
            for (section, body) in sections where !section.hasPrefix("$") && !section.hasPrefix("_") {
                guard case .object(let members) = body else {
                    throw LoadError(description: "config section \(section) must be an object")
                }
                for (name, value) in members where !name.hasPrefix("_") {
                    let key = "\(section).\(name)"
                    guard let field = fields.first(where: { $0.key == key }) else {
                        throw LoadError(description: "unknown config key \(key) in \(path)")
                    }
                    try field.setJSON(&settings, value)
                }
            }
        }
        for field in fields {
            if let raw = environment[field.environmentName] { try field.setText(&settings, raw) }
        }
        for field in fields {
            if let flag = field.flag, let raw = flags[flag] { try field.setText(&settings, raw) }
        }
        return settings
    }

    /// `server.dataDir` → `SUPLASH_SERVER_DATA_DIR`; `mail.resendURL` → `SUPLASH_MAIL_RESEND_URL`.
    static func environmentName(for key: String) -> String {
        var out = "SUPLASH_"
        let scalars = Array(key.unicodeScalars)
        for (i, c) in scalars.enumerated() {
            if c == "." {
                out += "_"
                continue
            }
            let isUpper = CharacterSet.uppercaseLetters.contains(c)
            if isUpper, i > 0 {
                let prev = scalars[i - 1]
                let next = i + 1 < scalars.count ? scalars[i + 1] : nil
                let prevLowerOrDigit = CharacterSet.lowercaseLetters.contains(prev) || CharacterSet.decimalDigits.contains(prev)
                let nextLower = next.map { CharacterSet.lowercaseLetters.contains($0) } ?? false
                if prevLowerOrDigit || (CharacterSet.uppercaseLetters.contains(prev) && nextLower) { out += "_" }
            }
            out += String(c).uppercased()
        }
        return out
    }

    /// The settings as nested JSON (`{"server": {...}, ...}`) in `fields` order, secrets
    /// (`auth.jwtSecret`, `mail.resendApiKey`) shown as `(set)` when set; `defaultsOnly`
    /// prints the built-in defaults.
    func rendered(defaultsOnly: Bool) -> String {
        let source = defaultsOnly ? Settings() : self
        var sections: [(String, [(String, JSONValue)])] = []
        for field in Self.fields {
            let parts = field.key.split(separator: ".", maxSplits: 1).map(String.init)
            var value = field.json(source)
            if field.secret, !(value.stringValue ?? "").isEmpty { value = .string("(set)") }
            if let i = sections.firstIndex(where: { $0.0 == parts[0] }) {
                sections[i].1.append((parts[1], value))
            } else {
                sections.append((parts[0], [(parts[1], value)]))
            }
        }
        return JSONValue.object(sections.map { ($0.0, JSONValue.object($0.1)) }).serializedString()
    }

    /// First line of the generated key table in docs/configuration.md.
    static let markdownBegin =
        "<!-- BEGIN generated by `suplash-server config --markdown` from Settings.fields (scripts/update-config-docs) -->"
    /// Last line of the generated key table in docs/configuration.md.
    static let markdownEnd = "<!-- END generated key table -->"

    /// The key table of docs/configuration.md between its marker lines (both included),
    /// one row per field: key, environment variable, flag, default, meaning.
    /// - Throws: `LoadError` when a field of `Settings` has no row in `fields` (or the reverse).
    static func markdownTable() throws -> String {
        try checkFieldsCoverSettings()
        var lines = [markdownBegin, "| key | environment variable | flag | default | meaning |", "|---|---|---|---|---|"]
        let defaults = Settings()
        for field in fields {
            let flag = field.flag.map { " `--\($0)` " } ?? " "
            lines.append("| `\(field.key)` | `\(field.environmentName)` |\(flag)| \(field.shownDefault(defaults)) | \(field.doc) |")
        }
        lines.append(markdownEnd)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every stored property of every group has a row in `fields` and every row names one:
    /// property names are the keys' second halves (`server.dataDir` is `server.dataDir`).
    private static func checkFieldsCoverSettings() throws {
        var properties: Set<String> = []
        for group in Mirror(reflecting: Settings()).children {
            guard let section = group.label else { continue }
            for member in Mirror(reflecting: group.value).children {
                if let name = member.label { properties.insert("\(section).\(name)") }
            }
        }
        let keys = Set(fields.map(\.key))
        guard properties == keys else {
            let missing = properties.subtracting(keys).union(keys.subtracting(properties)).sorted()
            throw LoadError(description: "Settings.fields and the Settings properties differ: \(missing.joined(separator: ", "))")
        }
    }
}

extension Settings {
    /// One configuration key: its name, the typed field it sets, the flag that sets it, its
    /// meaning for the docs, and how its value is read, written and shown.
    struct Field {
        let key: String
        let flag: String?
        let doc: String
        /// Shown as `(set)` instead of its value.
        let secret: Bool
        let environmentName: String
        /// Parses JSON from the config file into the field.
        let setJSON: (inout Settings, JSONValue) throws -> Void
        /// Parses text from the environment or a flag into the field.
        let setText: (inout Settings, String) throws -> Void
        /// The field's value as `config` prints it.
        let json: (Settings) -> JSONValue
        private let shown: String?
        private let note: String?

        /// - Parameters:
        ///   - shown: the docs' default cell when the built-in value would mislead (`found upward`).
        ///   - note: text after the built-in default in the docs (`(= cores)`).
        init<Value: SettingValue>(
            _ key: String, _ path: WritableKeyPath<Settings, Value>, flag: String? = nil,
            secret: Bool = false, shown: String? = nil, note: String? = nil, _ doc: String
        ) {
            self.key = key
            self.flag = flag
            self.doc = doc
            self.secret = secret
            self.shown = shown
            self.note = note
            self.environmentName = Settings.environmentName(for: key)
            setJSON = { settings, value in settings[keyPath: path] = try Value(json: value, key: key) }
            setText = { settings, text in settings[keyPath: path] = try Value(text: text, key: key) }
            json = { settings in settings[keyPath: path].json }
        }

        /// The docs' default cell: `shown`, else the built-in value in code font (`""` when empty).
        func shownDefault(_ defaults: Settings) -> String {
            if let shown { return shown }
            let value: String
            switch json(defaults) {
            case .string(let s): value = s.isEmpty ? "`\"\"`" : "`\(s)`"
            case let other: value = "`\(other.serializedString())`"
            }
            return note.map { "\(value) \($0)" } ?? value
        }
    }
}

/// A type a configuration field may have: read from the config file's JSON and from the text
/// of a variable or flag, printed back as JSON. Errors name the key, never the value.
protocol SettingValue: Sendable, Equatable {
    /// - Throws: `Settings.LoadError` when `json` does not fit.
    init(json: JSONValue, key: String) throws
    /// - Throws: `Settings.LoadError` when `text` does not fit.
    init(text: String, key: String) throws
    var json: JSONValue { get }
}

extension Int: SettingValue {
    init(json: JSONValue, key: String) throws {
        guard let v = json.int64Value, let i = Int(exactly: v) else {
            throw Settings.LoadError(description: "\(key) must be an integer")
        }
        self = i
    }

    init(text: String, key: String) throws {
        guard let n = JSONNumber(text: text.trimmingCharacters(in: .whitespaces)) else {
            throw Settings.LoadError(description: "\(key) must be a number")
        }
        try self.init(json: .number(n), key: key)
    }

    var json: JSONValue { .number(JSONNumber(Int64(self))) }
}

extension Bool: SettingValue {
    init(json: JSONValue, key: String) throws {
        guard let b = json.boolValue else { throw Settings.LoadError(description: "\(key) must be true or false") }
        self = b
    }

    /// `true`/`1`/`yes` or `false`/`0`/`no`, any case.
    init(text: String, key: String) throws {
        switch text.lowercased() {
        case "true", "1", "yes": self = true
        case "false", "0", "no": self = false
        default: throw Settings.LoadError(description: "\(key) must be true or false")
        }
    }

    var json: JSONValue { .bool(self) }
}

extension String: SettingValue {
    init(json: JSONValue, key: String) throws {
        guard let s = json.stringValue else { throw Settings.LoadError(description: "\(key) must be a string") }
        self = s
    }

    init(text: String, key: String) throws {
        self = text
    }

    var json: JSONValue { .string(self) }
}

/// A comma-separated list: items trimmed, empty ones dropped; printed joined by commas.
extension Array: SettingValue where Element == String {
    init(json: JSONValue, key: String) throws {
        try self.init(text: String(json: json, key: key), key: key)
    }

    init(text: String, key: String) throws {
        self = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    var json: JSONValue { .string(joined(separator: ",")) }
}

/// A field with a fixed set of values, spelled as the cases' raw values.
protocol SettingChoice: SettingValue, RawRepresentable<String>, CaseIterable {}

extension SettingChoice {
    init(json: JSONValue, key: String) throws {
        try self.init(text: json.stringValue ?? "", key: key)
    }

    init(text: String, key: String) throws {
        guard let value = Self(rawValue: text) else {
            let names = Self.allCases.map(\.rawValue)
            let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1] : names.joined()
            throw Settings.LoadError(description: "\(key) must be \(list)")
        }
        self = value
    }

    var json: JSONValue { .string(rawValue) }
}

extension LogLevel: SettingChoice {}
