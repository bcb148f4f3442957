import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashJSON
import SuplashLogging
import SuplashSQLiteStore
import SuplashStorage

/// `suplash-server` — the Suplash Sync server and its operations CLI.
func main() -> Int32 {
    // A write to a closed pipe or socket gets EPIPE instead of ending the process: a client that
    // went away (the server), or standard output or error nobody reads any more (`migrate 2>&1 |
    // head -1` once `head` has exited: the command still did its work and exits 0, not 141).
    signal(SIGPIPE, SIG_IGN)
    let parsed: ParsedCommandLine
    do {
        parsed = try ParsedCommandLine(Array(CommandLine.arguments.dropFirst()))
    } catch {
        StandardStreams.error("suplash-server: \(error)\n\n\(ParsedCommandLine.usage)\n")
        return 64
    }
    if ["help", "--help", "-h"].contains(parsed.command) {
        print(ParsedCommandLine.usage)
        return 0
    }
    if parsed.command == "problem-codes" {
        // The problem registry needs no configuration: docs/errors.md is this output.
        if parsed.switches.contains("markdown") {
            print(ProblemRegistry.markdown(), terminator: "")
        } else {
            print(
                JSONValue.array(
                    ProblemRegistry.all.map { entry in
                        .object([
                            ("code", .string(entry.code)), ("status", .number(JSONNumber(entry.status))),
                            ("title", .string(entry.title)), ("type", .string(entry.type)),
                            ("scope", .string(entry.scope.rawValue)),
                        ])
                    }
                ).serializedString())
        }
        return 0
    }
    if parsed.command == "config", parsed.switches.contains("markdown") {
        // The key table of docs/configuration.md: from the declarations alone, never the environment.
        do {
            print(try Settings.markdownTable(), terminator: "")
            return 0
        } catch {
            StandardStreams.error("suplash-server: \(error)\n")
            return 1
        }
    }
    var databasePath: String?
    // Every log line is written from the logging thread (docs/operations.md, "The log
    // thread"); it is flushed and stopped on every way out of this function.
    let logWriter = LogWriter(sink: FileDescriptorLogSink.standardError)
    defer { logWriter.shutdown() }
    do {
        let settings = try Settings.load(
            file: parsed.options["config"], environment: ProcessInfo.processInfo.environment,
            flags: parsed.options)
        let logger = Logger(minimumLevel: settings.log.level, writer: logWriter)
        if settings.storage.driver == .sqlite { databasePath = settings.sqliteDatabasePath }
        let options = StartupOptions(parsed)
        switch parsed.command {
        case "serve":
            return try ServeCommand.run(settings, logger: logger, options: options)
        case "migrate":
            let env = try Environment.make(settings, logger: logger, migrate: true, options: options)
            let applied = try env.backend.applied()
            env.backend.close()
            print("schema at version \(applied.last?.version ?? 0) (\(applied.count) migrations applied)")
            return 0
        case "routes":
            return try ServeCommand.run(settings, logger: logger, routesOnly: true)
        case "config":
            print(settings.rendered(defaultsOnly: parsed.positional.first == "defaults"))
            return 0
        case "backup":
            // A consistent online snapshot (SQLite's backup API) while a server may be running.
            guard let destination = parsed.options["to"] else {
                throw ParsedCommandLine.UsageError(description: "backup needs --to FILE")
            }
            try BackupCommand.checkDestination(destination)
            let env = try Environment.make(settings, logger: logger, migrate: false, requireDatabase: true)
            defer { env.backend.close() }
            let bytes = try BackupCommand.run(env.backend, to: destination)
            print("\(destination)\t\(bytes) bytes")
            return 0
        case "reseal":
            // Moves every sealed value to security.sealingKeyFile (docs/apple.md, "Key rotation").
            let env = try Environment.make(settings, logger: logger, migrate: true, options: options)
            defer { env.backend.close() }
            let (resealed, total) = try SealingWiring.reseal(
                try SealingWiring.keyring(settings), store: env.backend.makeStore().store)
            print("resealed \(resealed) of \(total) sealed values")
            return 0
        case "migrate-data":
            return try MigrateDataCommand.run(parsed, settings: settings, logger: logger)
        case "admin-key":
            return try AdminKeyCommand.run(parsed, settings: settings, logger: logger)
        default:
            StandardStreams.error("suplash-server: unknown command\n\n\(ParsedCommandLine.usage)\n")
            return 64
        }
    } catch {
        // The log lines before the failure come first on standard error.
        logWriter.flush()
        let (text, code) = CLIError.describe(error, database: databasePath)
        StandardStreams.error("suplash-server: \(text)\n")
        return code
    }
}

/// `admin-key create --name NAME | list | revoke NAME`.
enum AdminKeyCommand {
    static func run(_ parsed: ParsedCommandLine, settings: Settings, logger: Logger) throws -> Int32 {
        let env = try Environment.make(settings, logger: logger, migrate: true)
        defer { env.backend.close() }
        let store = env.backend.makeStore().store
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        switch parsed.positional.first {
        case "create":
            guard let name = parsed.options["name"] ?? parsed.positional.dropFirst().first,
                (1...64).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) })
            else {
                throw ParsedCommandLine.UsageError(description: "admin-key create needs --name NAME (1–64 of letters, digits, - _ .)")
            }
            let (key, hash) = AdminKeyFormat.generate()
            do {
                try store.createAdminKey(name: name, keyHash: hash, now: now)
            } catch RepositoryError.conflict {
                throw ParsedCommandLine.UsageError(description: "an admin key with this name exists")
            }
            print(key)
            return 0
        case "list":
            for record in try store.adminKeys() {
                let state = record.revokedAt.map { "revoked \(RFC3339.format($0))" } ?? "active"
                print("\(record.name)\tcreated \(RFC3339.format(record.createdAt))\t\(state)")
            }
            return 0
        case "revoke":
            guard let name = parsed.positional.dropFirst().first ?? parsed.options["name"] else {
                throw ParsedCommandLine.UsageError(description: "admin-key revoke needs NAME")
            }
            guard try store.revokeAdminKey(name: name, now: now) else {
                throw ParsedCommandLine.UsageError(description: "no active admin key with this name")
            }
            print("revoked")
            return 0
        default:
            throw ParsedCommandLine.UsageError(description: "admin-key needs create, list or revoke")
        }
    }
}

exit(main())
