import Foundation
import SuplashJSON

/// Server configuration (docs/configuration.md): documented defaults in
/// `config/suplash.json`, each key overridable by `SUPLASH_<SECTION>_<KEY>` (camelCase key
/// in upper snake case: `server.dataDir` → `SUPLASH_SERVER_DATA_DIR`), the main ones by flags.
/// Unknown `SUPLASH_*` variables are ignored; unknown keys in the file are an error.
struct Configuration: Sendable {
    /// Every key with its built-in default; `config/suplash.json` mirrors this table
    /// (a test checks that they agree).
    static let defaults: [(key: String, value: JSONValue)] = [
        ("server.host", .string("127.0.0.1")),
        ("server.port", .number(JSONNumber(8080))),
        ("server.dataDir", .string("./data")),
        ("server.eventLoops", .number(JSONNumber(0))),
        ("server.workerThreads", .number(JSONNumber(0))),
        ("server.writeWorkerThreads", .number(JSONNumber(0))),
        ("server.connectionCap", .number(JSONNumber(16_384))),
        ("server.maxConnectionsPerAddress", .number(JSONNumber(4096))),
        ("server.connectionMemoryBudgetBytes", .number(JSONNumber(262_144))),
        ("server.headerReadTimeoutSeconds", .number(JSONNumber(10))),
        ("server.keepAliveIdleSeconds", .number(JSONNumber(60))),
        ("server.maxBodyBytes", .number(JSONNumber(1_048_576))),
        ("server.batchMaxBodyBytes", .number(JSONNumber(4_194_304))),
        ("server.shutdownGraceSeconds", .number(JSONNumber(10))),
        ("server.trustedProxies", .string("")),
        ("server.backupDir", .string("")),
        ("server.corsOrigins", .string("")),
        ("server.openapiPath", .string("")),
        ("storage.driver", .string("sqlite")),
        ("storage.sqlitePath", .string("")),
        ("storage.migrationsDir", .string("")),
        ("storage.readers", .number(JSONNumber(4))),
        ("storage.busyTimeoutMs", .number(JSONNumber(5000))),
        ("storage.writerCacheKib", .number(JSONNumber(4000))),
        ("storage.readerCacheKib", .number(JSONNumber(2000))),
        ("storage.writeProbeIntervalSeconds", .number(JSONNumber(5))),
        ("storage.postgresUrl", .string("")),
        ("storage.postgresPoolSize", .number(JSONNumber(16))),
        ("storage.postgresMigrationsDir", .string("")),
        ("auth.jwtSecret", .string("")),
        ("auth.accessTokenTtlSeconds", .number(JSONNumber(3600))),
        ("auth.refreshTokenTtlSeconds", .number(JSONNumber(2_592_000))),
        ("auth.argon2MemoryKib", .number(JSONNumber(19_456))),
        ("auth.argon2Iterations", .number(JSONNumber(2))),
        ("auth.argon2Parallelism", .number(JSONNumber(1))),
        ("auth.hashingConcurrency", .number(JSONNumber(0))),
        ("ratelimit.enabled", .bool(true)),
        ("ratelimit.authPerIpPerHour", .number(JSONNumber(120))),
        ("ratelimit.ipPerMinute", .number(JSONNumber(1200))),
        ("ratelimit.devicePerMinute", .number(JSONNumber(300))),
        ("ratelimit.userPerMinute", .number(JSONNumber(600))),
        ("ratelimit.loginFailuresPerAccountPer15Minutes", .number(JSONNumber(10))),
        ("ratelimit.store", .string("auto")),
        ("billing.tariffsDir", .string("")),
        ("reminders.messagesDir", .string("")),
        ("sync.tombstoneRetentionDays", .number(JSONNumber(90))),
        ("sync.maintenanceIntervalSeconds", .number(JSONNumber(3600))),
        ("mail.transport", .string("file")),
        ("mail.resendURL", .string("https://api.resend.com")),
        ("mail.resendApiKey", .string("")),
        ("mail.from", .string("Suplash <no-reply@suplash.app>")),
        ("apple.jwksURL", .string("https://appleid.apple.com/auth/keys")),
        ("apple.audiences", .string("")),
        ("log.level", .string("info")),
    ]

    private var values: [String: JSONValue]

    /// Errors while loading; messages name keys and files, never values.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    /// Loads defaults, then `file` (when given, or `config/suplash.json` when it exists),
    /// then the environment, then `flags` (`key → text`).
    static func load(file: String?, environment: [String: String], flags: [String: String]) throws -> Configuration {
        var values = Dictionary(uniqueKeysWithValues: defaults.map { ($0.key, $0.value) })
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
                    guard values[key] != nil else { throw LoadError(description: "unknown config key \(key) in \(path)") }
                    values[key] = value
                }
            }
        }
        for (key, _) in defaults {
            if let raw = environment[environmentName(for: key)] { values[key] = try parse(raw, like: values[key], key: key) }
        }
        for (key, raw) in flags { values[key] = try parse(raw, like: values[key], key: key) }
        return Configuration(values: values)
    }

    /// `server.dataDir` → `SUPLASH_SERVER_DATA_DIR`; `mail.resendURL` → `SUPLASH_MAIL_RESEND_URL`.
    static func environmentName(for key: String) -> String {
        var out = "SUPLASH_"
        let scalars = Array(key.unicodeScalars)
        for (i, c) in scalars.enumerated() {
            if c == "." { out += "_"; continue }
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

    private static func parse(_ raw: String, like current: JSONValue?, key: String) throws -> JSONValue {
        switch current {
        case .number:
            guard let n = JSONNumber(text: raw.trimmingCharacters(in: .whitespaces)) else {
                throw LoadError(description: "\(key) must be a number")
            }
            return .number(n)
        case .bool:
            switch raw.lowercased() {
            case "true", "1", "yes": return .bool(true)
            case "false", "0", "no": return .bool(false)
            default: throw LoadError(description: "\(key) must be true or false")
            }
        default:
            return .string(raw)
        }
    }

    func string(_ key: String) -> String { values[key]?.stringValue ?? "" }

    /// The configuration as nested JSON (`{"server": {...}, ...}`), with `auth.jwtSecret` and
    /// `mail.resendApiKey` redacted; `defaultsOnly` prints the built-in table.
    func rendered(defaultsOnly: Bool) -> String {
        var sections: [(String, [(String, JSONValue)])] = []
        for (key, value) in Self.defaults {
            let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
            var v = defaultsOnly ? value : (values[key] ?? value)
            if key == "auth.jwtSecret" || key == "mail.resendApiKey", !(v.stringValue ?? "").isEmpty { v = .string("(set)") }
            if let i = sections.firstIndex(where: { $0.0 == parts[0] }) {
                sections[i].1.append((parts[1], v))
            } else {
                sections.append((parts[0], [(parts[1], v)]))
            }
        }
        return JSONValue.object(sections.map { ($0.0, JSONValue.object($0.1)) }).serializedString()
    }

    func bool(_ key: String) -> Bool { values[key]?.boolValue ?? false }

    func int(_ key: String) throws -> Int {
        guard let v = values[key]?.int64Value, let i = Int(exactly: v) else {
            throw LoadError(description: "\(key) must be an integer")
        }
        return i
    }
}
