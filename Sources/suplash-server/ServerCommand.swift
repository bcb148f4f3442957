import CMalloc
import Foundation
import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON
import SuplashLogging
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage

/// Opens the data dir and the database and applies pending migrations: the common
/// start of `serve`, `migrate` and `admin-key`.
struct Environment {
    let settings: Settings
    let dataDir: String
    let backend: StorageBackend
    let migrations: [Migration]
    let logger: Logger
    /// What the start-up flags allow (the token secret rules).
    var options = StartupOptions()

    /// - Parameters:
    ///   - options: what `--init-empty` / `--new-jwt-secret` allow (spec §7 start-up checks).
    ///   - requireDatabase: refuse when there is no database yet (`backup`: nothing to copy).
    /// - Throws: `StartupRefusal` when the data dir or the database fails a start-up check
    ///   (`StartupChecks`), `Settings.LoadError`, `MigrationError`, or the store's error.
    static func make(
        _ settings: Settings, logger: Logger, migrate: Bool,
        options: StartupOptions = StartupOptions(), requireDatabase: Bool = false
    ) throws -> Environment {
        let dataDir = settings.server.dataDir
        let backend: StorageBackend
        let migrations: [Migration]
        switch settings.storage.driver {
        case .sqlite:
            let path = settings.sqliteDatabasePath
            migrations = try Migrator.load(directory: try locateMigrations(settings.storage.migrationsDir))
            if requireDatabase, (fileSize(path) ?? 0) == 0 {
                throw StartupRefusal(
                    description: "\(path) is missing or empty: there is no database to read. Check "
                        + "--data-dir (server.dataDir) and storage.sqlitePath", exitCode: ExitCode.noInput)
            }
            let plan = try StartupChecks.preflightSQLite(
                dataDir: dataDir, databasePath: path, options: options,
                secretConfigured: !settings.auth.jwtSecret.isEmpty, logger: logger)
            let database: SQLiteDatabase
            do {
                database = try SQLiteDatabase(
                    path: path, readers: settings.storage.readers,
                    busyTimeoutMs: settings.storage.busyTimeoutMs,
                    writerCacheKiB: settings.storage.writerCacheKib,
                    readerCacheKiB: settings.storage.readerCacheKib)
            } catch let error as StorageError {
                throw StartupChecks.openFailed(path, error)
            }
            do {
                try StartupChecks.checkSQLiteIntegrity(database, forceQuickCheck: plan.forceQuickCheck, logger: logger)
                try StartupChecks.checkSQLiteHoldsData(database, plan: plan)
            } catch {
                database.close()
                throw error
            }
            backend = .sqlite(database)
        case .postgres:
            let url = settings.storage.postgresUrl
            guard !url.isEmpty else {
                throw Settings.LoadError(description: "storage.postgresUrl is required when storage.driver is postgres")
            }
            migrations = try Migrator.load(
                directory: try ResourceLocator.locate(
                    "Migrations/postgres", configured: settings.storage.postgresMigrationsDir, directory: true,
                    configKey: "storage.postgresMigrationsDir"))
            do {
                backend = .postgres(try PostgresDatabase(url: url, poolSize: max(1, settings.storage.postgresPoolSize)))
            } catch let error as PostgresError {
                // The server's text may echo the URL (with a password): report the kind only.
                throw StartupRefusal(
                    description: "cannot connect to PostgreSQL (storage.postgresUrl): "
                        + "\(error.kind.rawValue). Check that the database is up, reachable and accepts "
                        + "this user, then start again", exitCode: ExitCode.temporary)
            }
            if case .postgres(let database) = backend {
                do {
                    try StartupChecks.preflightPostgres(database, dataDir: dataDir, options: options)
                } catch {
                    database.close()
                    throw error
                }
            }
        }
        if migrate {
            let applied = try backend.migrate(migrations)
            if applied > 0 { logger.info("migrations_applied", .count("applied", applied)) }
        }
        return Environment(
            settings: settings, dataDir: dataDir, backend: backend, migrations: migrations,
            logger: logger, options: options)
    }

    /// The SQLite migrations folder: the configured one, else `Migrations/sqlite` under the
    /// working directory or under a parent of the executable (a build tree or `/app`).
    static func locateMigrations(_ configured: String) throws -> String {
        try ResourceLocator.locate(
            "Migrations/sqlite", configured: configured, directory: true,
            configKey: "storage.migrationsDir")
    }

    /// The OpenAPI document served at `GET /openapi.json`: `server.openapiPath`, else
    /// `docs/openapi.json` found like the migrations. Read once at start; a missing file or
    /// one that is not JSON refuses start-up.
    static func loadOpenAPIDocument(_ configured: String) throws -> [UInt8] {
        let path = try ResourceLocator.locate(
            "docs/openapi.json", configured: configured, directory: false,
            configKey: "server.openapiPath")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Settings.LoadError(description: "cannot read the OpenAPI document (server.openapiPath)")
        }
        let bytes = Array(data)
        guard case .object = try? JSONParser.parse(bytes) else {
            throw Settings.LoadError(description: "the OpenAPI document (server.openapiPath) is not a JSON object")
        }
        return bytes
    }

    /// The JWT signing secret on PostgreSQL, where instances with separate data dirs must
    /// agree: `auth.jwtSecret` when configured, else the one stored in the database
    /// (`server_secrets`), which the first instance seeds with its data dir's `jwt-secret`
    /// if it has one (tokens issued before a move from SQLite stay valid), else random bytes.
    ///
    /// Refused (`StartupRefusal`) when no secret is stored, none is in the data dir and the
    /// database holds accounts — their tokens were signed with a secret that is gone —
    /// unless `--new-jwt-secret`.
    func sharedJWTSecret(_ store: PostgresStore) throws -> [UInt8] {
        if !settings.auth.jwtSecret.isEmpty { return try jwtSecret() }
        let file = Self.readSecretFile(dataDir + "/jwt-secret")
        if file == nil, !options.newJWTSecret, case .postgres(let database) = backend {
            let (stored, accounts) = try database.read { c in
                (
                    try c.query("SELECT 1 FROM server_secrets WHERE name = 'jwt'").isEmpty == false,
                    try c.query("SELECT 1 FROM users LIMIT 1").isEmpty == false
                )
            }
            if !stored, accounts {
                throw StartupChecks.secretMissing(
                    "the token secret (table server_secrets, row jwt)",
                    accounts: "the PostgreSQL database")
            }
        }
        let candidate = file ?? SecureRandom.bytes(32)
        return try store.sharedSecret(name: "jwt", candidate: candidate, now: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// The secret in a `jwt-secret` file (base64url, ≥ 32 bytes), or nil.
    static func readSecretFile(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8),
            let bytes = Base64URL.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count >= 32
        else {
            return nil
        }
        return bytes
    }

    /// The JWT signing secret: `auth.jwtSecret` (base64url or text ≥ 32 bytes), else the
    /// `jwt-secret` file in the data dir, generated on first start with mode 0600.
    ///
    /// Refused (`StartupRefusal`, 65) when the file holds something else than a secret, or
    /// when it is missing while the database holds accounts — unless `--new-jwt-secret`
    /// (a bad file is then moved aside first).
    func jwtSecret() throws -> [UInt8] {
        let configured = settings.auth.jwtSecret
        if !configured.isEmpty {
            let bytes = Base64URL.decode(configured) ?? Array(configured.utf8)
            guard bytes.count >= 32 else {
                throw Settings.LoadError(description: "auth.jwtSecret must hold at least 32 bytes")
            }
            return bytes
        }
        let path = dataDir + "/jwt-secret"
        if let size = fileSize(path) {
            if let bytes = Self.readSecretFile(path) { return bytes }
            guard options.newJWTSecret else {
                throw StartupRefusal(
                    description: "\(path) holds \(size) bytes, not a base64url secret of at least 32 "
                        + "bytes: restore it from the backup of this data dir (or set auth.jwtSecret to the "
                        + "old secret). To sign everyone out and continue with a new secret, start once with "
                        + "--new-jwt-secret (the bad file is moved aside)", exitCode: ExitCode.dataError)
            }
            let aside = "\(path).orphaned-\(Int(Date().timeIntervalSince1970))"
            guard rename(path, aside) == 0 else {
                throw StartupRefusal(
                    description: "cannot move \(path) aside (\(String(cString: strerror(errno)))): "
                        + "move it yourself, then start again", exitCode: ExitCode.ioError)
            }
        } else if !options.newJWTSecret, try backend.holdsAccounts() {
            throw StartupChecks.secretMissing(path, accounts: backend.name)
        }
        let secret = SecureRandom.bytes(32)
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            // Another process created it first: use theirs.
            if code == EEXIST, let bytes = Self.readSecretFile(path) { return bytes }
            throw StartupRefusal(
                description: "cannot create \(path) (\(String(cString: strerror(code)))): make the data "
                    + "dir writable for the server's user, or set auth.jwtSecret", exitCode: ExitCode.notWritable)
        }
        let text = Array((Base64URL.encode(secret) + "\n").utf8)
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        guard written == text.count, synced else {
            unlink(path)
            throw StartupRefusal(
                description: "cannot write \(path) (the disk may be full): free space, then start again",
                exitCode: ExitCode.ioError)
        }
        return secret
    }
}

/// `suplash-server serve` (and `routes`, which wires the same application and prints its
/// route table instead of serving).
enum ServeCommand {
    static func run(
        _ settings: Settings, logger: Logger, routesOnly: Bool = false,
        options: StartupOptions = StartupOptions()
    ) throws -> Int32 {
        // Signals are taken synchronously by this thread (sigwait), so block them before any
        // other thread starts. (SIGPIPE is ignored by `main`.)
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        // Argon2id allocates its memory (12 MiB by default) per hash with malloc. glibc raises its mmap threshold
        // after the first such block is freed, so later blocks would come from (and stay in)
        // each worker thread's heap arena. A fixed threshold keeps them mmapped: freed at once.
        _ = cmalloc_set_mmap_threshold(1 << 20)
        // One malloc arena per core instead of glibc's 8 per core: freed blocks stay in their
        // arena, so a dozen threads kept ~9 MiB more resident after a large response (measured,
        // Benchmarks/profile). MALLOC_ARENA_MAX in the environment still wins.
        if ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil {
            _ = cmalloc_set_arena_max(Int32(max(1, ProcessInfo.processInfo.activeProcessorCount)))
        }
        let limits = ResourceLimits.raiseOpenFileLimit()
        logger.info("open_file_limit", .number("soft", limits.soft), .number("hard", limits.hard))

        let env = try Environment.make(settings, logger: logger, migrate: true, options: options)
        if !routesOnly { try WALPositionCheck.run(env.backend, logger: logger) }
        let storageHealth = StorageHealth()
        let (store, subscribe, postgresStore) = env.backend.makeStore(health: storageHealth)
        let keyring = try SealingWiring.keyring(settings)
        try SealingWiring.checkKeys(keyring, store: store)
        try SealingWiring.sealStoredDeviceTokens(keyring, store: store, logger: logger)
        let secret = try postgresStore.map { try env.sharedJWTSecret($0) } ?? env.jwtSecret()
        let tokens = TokenService(
            secret: secret,
            accessTokenTTL: Int64(settings.auth.accessTokenTtlSeconds),
            refreshTokenTTL: Int64(settings.auth.refreshTokenTtlSeconds))
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let revocations = RevocationView(
            revokedSessions: try store.sessionsRevoked(since: nowMs - (tokens.accessTokenTTL + 60) * 1000),
            revokedUsers: try store.accountsErased(since: nowMs - (tokens.accessTokenTTL + 60) * 1000))
        // On PostgreSQL (several instances, and the CLI) every admin request reads the key
        // table, so a revoked key is refused by all at once; SQLite keeps the 0.5 s snapshot.
        let adminKeys = AdminKeyCache(repository: store, maxAge: postgresStore == nil ? 0.5 : 0)
        // Several instances (PostgreSQL): every user token's session is checked in the database.
        var sessionCheck: (@Sendable (String, String) throws -> Bool)?
        if let postgresStore {
            sessionCheck = { sessionID, userID in try postgresStore.isSessionLive(id: sessionID, userID: userID) }
        }
        let rateLimits: RateLimits
        if settings.ratelimit.enabled {
            rateLimits = RateLimits(
                authPerAddressPerHour: settings.ratelimit.authPerIpPerHour,
                perAddressPerMinute: settings.ratelimit.ipPerMinute,
                perDevicePerMinute: settings.ratelimit.devicePerMinute,
                perUserPerMinute: settings.ratelimit.userPerMinute,
                loginFailuresPerAccountPer15Minutes: settings.ratelimit.loginFailuresPerAccountPer15Minutes,
                trustedProxies: Set(settings.server.trustedProxies),
                shared: try SharedStateWiring.rateLimitBuckets(settings, store: store, secret: secret, logger: logger))
        } else {
            rateLimits = .disabled
        }
        let metrics = Metrics()
        var backupDir = settings.server.backupDir
        if backupDir.isEmpty { backupDir = env.dataDir + "/backups" }
        var concurrency = settings.auth.hashingConcurrency
        if concurrency <= 0 { concurrency = ProcessInfo.processInfo.activeProcessorCount }
        let hashing = try PasswordHashing(
            parameters: Argon2idParameters(
                memoryKiB: UInt32(settings.auth.argon2MemoryKib),
                iterations: UInt32(settings.auth.argon2Iterations),
                parallelism: UInt32(settings.auth.argon2Parallelism)),
            concurrency: concurrency)
        let backend = env.backend
        var services = Services(
            users: store, sessions: store, entries: store, tokens: tokens, revocations: revocations,
            authenticator: Authenticator(
                tokens: tokens, revocations: revocations, adminKeys: adminKeys,
                perUserLimit: rateLimits.perUser,
                sessionCheck: sessionCheck),
            pageTokens: PageTokenCodec(key: HMACSHA256.authenticationCode(key: secret, message: Array("suplash page tokens v1".utf8))),
            passwordHashing: hashing, timeZones: TimeZoneDatabase(),
            domain: DomainServices(
                hydration: store, bills: store, accountData: store,
                tariffs: try TariffFiles.load(settings.billing.tariffsDir, logger: logger)),
            readiness: backend.readiness(env.migrations),
            operations: store, rateLimits: rateLimits, metrics: metrics, backupDirectory: backupDir,
            sync: SyncWiring.services(store: store, subscribe: subscribe, secret: secret),
            openAPIDocument: try Environment.loadOpenAPIDocument(settings.server.openapiPath))
        // The alert message catalogue is checked at start, so a bad file refuses start-up
        // before any reminder needs it; the reminder sender of push delivery will take it from here.
        let messages = try MessageFiles.load(settings.reminders.messagesDir, logger: logger)
        let maintenance = SyncMaintenance(
            repository: store, idempotency: store,
            retentionDays: settings.sync.tombstoneRetentionDays,
            intervalSeconds: Double(max(1, settings.sync.maintenanceIntervalSeconds)),
            logger: logger)
        let retention = RetentionMaintenance(
            revokeJobs: store, events: store, mail: store,
            intervalSeconds: Double(max(1, settings.sync.maintenanceIntervalSeconds)), logger: logger)
        let outbox = try MailWiring.install(
            into: &services, settings: settings, dataDir: env.dataDir, store: store,
            secret: secret, logger: logger)
        services.storageHealth = storageHealth
        let appleRevokes = try AppleWiring.install(
            into: &services, settings: settings, keyring: keyring, store: store, metrics: metrics, logger: logger)
        services.devices = DeviceRegistry(repository: store, bundleIDs: Set(settings.apns.bundleIds), keyring: keyring)
        services.reminders = store
        services.campaigns = store
        let reminderCounters = ReminderCounters()
        reminderCounters.register(with: metrics)
        services.reminderCounters = reminderCounters
        let reminderScheduler = ReminderWiring.install(
            settings: settings, store: store, campaigns: store, messages: messages, counters: reminderCounters,
            logger: logger)
        let pushSender = try PushWiring.install(
            into: &services, settings: settings, keyring: keyring, store: store, logger: logger)

        var api = APIConfiguration()
        api.defaultBodyLimit = settings.server.maxBodyBytes
        api.batchBodyLimit = settings.server.batchMaxBodyBytes
        api.workerThreads = settings.server.workerThreads
        api.writeWorkerThreads = settings.server.writeWorkerThreads
        api.corsOrigins = Set(settings.server.corsOrigins)
        let application = Application(services: services, configuration: api, logger: logger)
        if routesOnly {
            let table = JSONValue.array(
                application.routes.map {
                    .object([("method", .string($0.method)), ("template", .string($0.template))])
                })
            StandardStreams.output(bytes: table.serialized() + [0x0A])
            application.shutdown()
            backend.close()
            return 0
        }

        var http = HTTPServerConfiguration()
        http.host = settings.server.host
        http.port = settings.server.port
        let loops = settings.server.eventLoops
        http.loopCount = loops > 0 ? loops : ProcessInfo.processInfo.activeProcessorCount
        http.connectionCap = settings.server.connectionCap
        http.maxConnectionsPerAddress = settings.server.maxConnectionsPerAddress
        http.connectionMemoryBudget = settings.server.connectionMemoryBudgetBytes
        // Proxies' clients all arrive from the proxy's address: no per-address limit for them.
        http.unlimitedAddresses = Set(settings.server.trustedProxies)
        http.headerReadTimeout = Double(settings.server.headerReadTimeoutSeconds)
        http.keepAliveIdleTimeout = Double(settings.server.keepAliveIdleSeconds)
        http.defaultBodyLimit = api.defaultBodyLimit
        http.errorResponse = { error, _ in APIError.engineResponse(error) }
        let server = HTTPServer(configuration: http, responder: application, logger: logger)
        metrics.gauge("suplash_open_connections", help: "Open client connections.") { Double(server.openConnections) }
        if let logWriter = logger.writer {
            metrics.counter(
                "suplash_log_lines_dropped_total",
                help: "Info and debug log lines dropped because the log thread fell behind (warnings and errors never are)."
            ) { logWriter.droppedLineCount }
        }
        if let longPolls = services.sync?.longPolls {
            metrics.gauge("suplash_long_polls_waiting", help: "Sync pulls parked until a change or their deadline.") {
                Double(longPolls.waitingCount)
            }
        }
        if case .sqlite(let database) = backend {
            metrics.gauge("suplash_writer_queue_depth", help: "Write jobs waiting for the writer.") {
                Double(database.pendingWriteCount)
            }
            metrics.gauge("suplash_writer_mean_batch_size", help: "Write jobs per commit since start (group commit).") {
                let s = database.writerStatistics
                return s.commits > 0 ? Double(s.jobs) / Double(s.commits) : 0
            }
        }
        // Storage health: the periodic write probe, storage-error log lines and metrics.
        let storageMonitor = StorageMonitor(
            health: storageHealth, probe: store,
            intervalSeconds: Double(max(0, settings.storage.writeProbeIntervalSeconds)),
            metrics: metrics, logger: logger)
        // Several instances on one PostgreSQL database: hear the others' commits and
        // revocations (started before serving; its first LISTEN re-reads the revocations).
        let cluster = try postgresStore.map {
            try ClusterWiring.start(
                store: $0, longPolls: services.sync?.longPolls, revocations: revocations,
                adminKeys: adminKeys, revocationWindowMs: (tokens.accessTokenTTL + 60) * 1000, pushSender: pushSender,
                logger: logger)
        }
        outbox.start()
        appleRevokes?.start()
        pushSender?.start()
        reminderScheduler?.start()
        let port = try server.start()
        let shown = http.host.contains(":") ? "[\(http.host)]" : http.host
        // The readiness line is the one thing on stdout; logs go to stderr.
        StandardStreams.output("listening on http://\(shown):\(port)\n")

        var received: Int32 = 0
        sigwait(&signals, &received)
        logger.info("shutting_down", .number("signal", Int(received)))
        server.shutdown(gracePeriod: Double(settings.server.shutdownGraceSeconds))
        application.shutdown()
        cluster?.stop()
        maintenance.stop()
        retention.stop()
        storageMonitor.stop()
        outbox.stop()
        appleRevokes?.stop()
        reminderScheduler?.stop()
        pushSender?.stop()
        if case .sqlite(let database) = backend {
            do {
                _ = try database.checkpoint()
            } catch {
                logger.error("checkpoint_failed", .errorType(String(reflecting: type(of: error))))
            }
        }
        backend.close()
        logger.info("stopped")
        // Last: every line queued until now reaches standard error before the process exits.
        logger.flush()
        return 0
    }
}
