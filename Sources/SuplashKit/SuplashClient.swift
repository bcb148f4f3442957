import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a ``SuplashClient`` reaches its server and where it keeps its data.
public struct SuplashConfiguration: Sendable {
    /// The server, e.g. `http://127.0.0.1:8080`.
    public var serverURL: URL
    /// The SQLite file of the local store (created when missing).
    public var databasePath: String
    /// Where the session is kept between launches.
    public var credentials: any CredentialStore
    public var retry: RetryPolicy
    /// HTTP timeout for ordinary requests (long polls add their wait on top).
    public var requestTimeout: TimeInterval

    public init(
        serverURL: URL, databasePath: String, credentials: any CredentialStore,
        retry: RetryPolicy = RetryPolicy(), requestTimeout: TimeInterval = 30
    ) {
        self.serverURL = serverURL
        self.databasePath = databasePath
        self.credentials = credentials
        self.retry = retry
        self.requestTimeout = requestTimeout
    }
}

/// The Suplash client: an offline-first local store with a durable outbox and a sync engine.
///
/// Every write is committed to SQLite (the local view and an outbox row) before the call
/// returns, so the UI shows it at once and a crash loses nothing; ``sync()`` (or
/// ``startLiveSync(waitSeconds:)``) pushes the outbox and pulls the server's changes.
///
/// ```swift
/// let client = try SuplashClient(SuplashConfiguration(
///     serverURL: URL(string: "http://127.0.0.1:8080")!,
///     databasePath: dataDir + "/suplash.sqlite",
///     credentials: FileCredentialStore.default()))
/// try await client.signIn(email: "ayse@example.com", password: "correct horse battery")
/// let entry = try await client.logWater(250, source: .watch)   // durable now, pushed later
/// let report = try await client.sync()                         // push outbox, pull changes
/// let today = try await client.entries(on: Date(), in: .current)
/// ```
public actor SuplashClient {
    /// This install's device id (`X-Device-ID`): made once, kept in the local store.
    public nonisolated let deviceID: String
    private let configuration: SuplashConfiguration
    private let transport: Transport
    let store: LocalStore
    var session: Session?
    private var refreshTask: Task<Session, any Error>?
    private var pushTask: Task<SyncReport, any Error>?
    private var pullTask: Task<SyncReport, any Error>?
    private var liveTask: Task<Void, Never>?

    /// Opens (or creates) the local store and loads the stored session, if any.
    public init(_ configuration: SuplashConfiguration) throws {
        self.configuration = configuration
        transport = Transport(
            baseURL: configuration.serverURL, retry: configuration.retry,
            timeout: configuration.requestTimeout)
        store = try LocalStore(path: configuration.databasePath)
        if let id = try store.meta("device_id") {
            deviceID = id
        } else {
            let id = newUUID()
            try store.setMeta("device_id", id)
            deviceID = id
        }
        session = try configuration.credentials.load()
    }

    // MARK: - Session

    /// True when a session is stored.
    public var isSignedIn: Bool { session != nil }

    /// The signed-in user's id.
    public var userID: String? { session?.userID }

    /// Creates an account and signs in.
    public func signUp(email: String, password: String, displayName: String? = nil) async throws {
        var members: [(String, JSONText)] = [("email", .string(email)), ("password", .string(password))]
        if let displayName { members.append(("displayName", .string(displayName))) }
        try await authenticate(path: "/v1/auth/signup", body: .object(members), expected: 201)
    }

    /// Signs in. Signing in as another user than the last one clears the local store.
    public func signIn(email: String, password: String) async throws {
        try await authenticate(
            path: "/v1/auth/login",
            body: .object([("email", .string(email)), ("password", .string(password))]), expected: 200)
    }

    private func authenticate(path: String, body: JSONText, expected: Int) async throws {
        let response = try await transport.send(
            APIRequest(
                method: "POST", path: path, body: Data(body.text.utf8),
                headers: [("Idempotency-Key", newUUID())]))
        guard response.status == expected, let json = response.json,
            let user = json["user"] as? [String: Any], let userID = JSONRead.string(user["id"]),
            let newSession = parseSession(json["session"], userID: userID)
        else {
            throw response.status == expected ? SuplashError.invalidResponse("no session") : response.problem
        }
        if let previous = try store.meta("user_id"), previous != userID { try store.wipe() }
        try store.setMeta("user_id", userID)
        try setSession(newSession)
    }

    private func parseSession(_ value: Any?, userID: String) -> Session? {
        guard let s = value as? [String: Any], let access = JSONRead.string(s["accessToken"]),
            let refresh = JSONRead.string(s["refreshToken"])
        else { return nil }
        let ttl = TimeInterval(JSONRead.int(s["expiresIn"]) ?? 3600)
        return Session(
            serverURL: configuration.serverURL, userID: userID, accessToken: access, refreshToken: refresh,
            accessTokenExpiresAt: Date().addingTimeInterval(ttl))
    }

    private func setSession(_ new: Session?) throws {
        session = new
        try configuration.credentials.save(new)
    }

    /// Signs out: revokes the session on the server (best effort) and forgets it. The local
    /// store is kept unless `discardLocalData` (unsent writes would then be lost).
    public func signOut(discardLocalData: Bool = false) async throws {
        stopLiveSync()
        if let session {
            let body = JSONText.object([("refreshToken", .string(session.refreshToken))]).text
            _ = try? await transport.send(
                APIRequest(
                    method: "POST", path: "/v1/auth/logout", body: Data(body.utf8),
                    headers: [("Idempotency-Key", newUUID())]))
        }
        try setSession(nil)
        if discardLocalData { try store.wipe() }
    }

    /// Rotates the refresh token now (normally done on demand when the access token expires).
    /// - Throws: ``SuplashError/sessionEnded(code:)`` when the server refuses the refresh
    ///   token (`refresh_token_reused`: another client used it; the session is over).
    public func refreshSession() async throws {
        guard let session else { throw SuplashError.notSignedIn }
        _ = try await refresh(from: session)
    }

    /// One refresh at a time: concurrent callers share it (a second refresh with the same
    /// token would be a reuse and end the session).
    private func refresh(from stale: Session) async throws -> Session {
        if let current = session, current.refreshToken != stale.refreshToken { return current }
        if let running = refreshTask { return try await running.value }
        let task = Task { try await self.performRefresh(stale) }
        refreshTask = task
        defer { refreshTask = nil }
        return try await task.value
    }

    private func performRefresh(_ stale: Session) async throws -> Session {
        let body = JSONText.object([("refreshToken", .string(stale.refreshToken))]).text
        let response = try await transport.send(
            APIRequest(
                method: "POST", path: "/v1/auth/refresh", body: Data(body.utf8),
                headers: [("Idempotency-Key", newUUID())]))
        if response.status == 200, let new = parseSession(response.json?["session"], userID: stale.userID) {
            try setSession(new)
            return new
        }
        if response.status == 401 || response.status == 403 {
            // refresh_token_reused, invalid_refresh_token, an erased account: the session is over.
            stopLiveSync()
            try setSession(nil)
            throw SuplashError.sessionEnded(code: response.problemCode ?? "unauthenticated")
        }
        throw response.problem
    }

    /// Sends `request` with the access token, refreshing it first when it is about to expire
    /// and once more on a 401.
    private func authorized(_ request: APIRequest) async throws -> APIResponse {
        guard var current = session else { throw SuplashError.notSignedIn }
        if current.accessTokenExpiresAt.timeIntervalSinceNow < 30 { current = try await refresh(from: current) }
        var signed = request
        signed.headers.append(("Authorization", "Bearer " + current.accessToken))
        signed.headers.append(("X-Device-ID", deviceID))
        let response = try await transport.send(signed)
        guard response.status == 401 else { return response }
        current = try await refresh(from: current)
        signed = request
        signed.headers.append(("Authorization", "Bearer " + current.accessToken))
        signed.headers.append(("X-Device-ID", deviceID))
        let again = try await transport.send(signed)
        if again.status == 401 {
            try setSession(nil)
            throw SuplashError.sessionEnded(code: again.problemCode ?? "unauthenticated")
        }
        return again
    }

    // MARK: - Local writes (durable at once, pushed later)

    /// Logs water: committed to the local store and the outbox before it returns.
    ///
    /// ```swift
    /// let entry = try await client.logWater(330, at: Date(), source: .watch, note: "after run")
    /// ```
    @discardableResult
    public func logWater(
        _ amountMl: Int, at loggedAt: Date = Date(), source: EntrySource = .phone,
        note: String? = nil
    ) throws -> WaterEntry {
        let entry = WaterEntry(amountMl: amountMl, loggedAt: loggedAt, source: source, note: note)
        try save(entry)
        return entry
    }

    /// Creates or replaces an entry (all its writable fields) locally and queues the upsert.
    public func save(_ entry: WaterEntry) throws {
        guard (1...5000).contains(entry.amountMl) else {
            throw SuplashError.invalidArgument("amountMl must be from 1 to 5000")
        }
        guard UUID(uuidString: entry.id) != nil else { throw SuplashError.invalidArgument("id must be a UUID") }
        try store.recordLocalWrite(
            collection: "water_entries", id: entry.id, op: "upsert",
            data: entry.writableJSON(includeID: false).text,
            view: entry.writableJSON(includeID: true).text,
            loggedAtMillis: Timestamp.millis(entry.loggedAt),
            clientUpdatedAt: Timestamp.format(Date()), deviceID: deviceID)
        kickPush()
    }

    /// Deletes an entry locally and queues the delete (a tombstone on the server).
    public func deleteEntry(id: String) throws {
        try store.recordLocalWrite(
            collection: "water_entries", id: id.lowercased(), op: "delete", data: nil, view: nil,
            loggedAtMillis: nil, clientUpdatedAt: Timestamp.format(Date()), deviceID: deviceID)
        kickPush()
    }

    // MARK: - Local reads (offline)

    /// Entries with `loggedAt` in `[from, to)`, newest first, including unsent ones.
    public func entries(from: Date, to: Date) throws -> [WaterEntry] {
        try store.entries(fromMillis: Timestamp.millis(from), toMillis: Timestamp.millis(to))
    }

    /// The entries of the local day containing `date` in `timeZone` (a DST day is 23 or 25 h).
    public func entries(on date: Date, in timeZone: TimeZone) throws -> [WaterEntry] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let start = calendar.startOfDay(for: date)
        let end = calendar.date(byAdding: .day, value: 1, to: start) ?? start.addingTimeInterval(86_400)
        return try entries(from: start, to: end)
    }

    /// One entry by id, nil when unknown or deleted.
    public func entry(id: String) throws -> WaterEntry? {
        try store.document("water_entries", id.lowercased()).flatMap(WaterEntry.init(json:))
    }

    /// The profile's `timezone` once pulled (else nil).
    public func profileTimeZone() throws -> TimeZone? {
        try store.firstDocument("profile").flatMap(JSONRead.object).flatMap { JSONRead.string($0["timezone"]) }
            .flatMap(TimeZone.init(identifier:))
    }

    /// Writes still waiting in the outbox.
    public func pendingCount() throws -> Int { try store.pendingCount() }

    /// Mutations the server refused (kept for the UI; they are not retried).
    public func rejectedMutations() throws -> [RejectedMutation] { try store.rejected() }

    // MARK: - Sync

    /// Pushes the outbox, then pulls every change since the last sync. When the pull found
    /// the server's history replaced (410 `sync_history_changed`: restored from a backup),
    /// what it queued to give back is pushed at once and pulled again.
    public func sync() async throws -> SyncReport {
        var report = try await push()
        let pulled = try await pull()
        report.pulled = pulled.pulled
        report.restartedFromSnapshot = pulled.restartedFromSnapshot
        report.healedServer = pulled.healedServer
        report.pushedBack = pulled.pushedBack
        if pulled.pushedBack > 0 {
            let again = try await push()
            report.applied += again.applied
            report.superseded += again.superseded
            report.rejected += again.rejected
            report.pulled += try await pull().pulled
        }
        return report
    }

    /// Pushes the outbox in batches of at most 500 (`POST /v1/sync`), oldest first. Each
    /// batch keeps its Idempotency-Key until it is settled, across crashes too.
    public func push() async throws -> SyncReport {
        while let running = pushTask { _ = try? await running.value }
        let task = Task { try await self.pushAll() }
        pushTask = task
        defer { pushTask = nil }
        return try await task.value
    }

    private func pushAll() async throws -> SyncReport {
        var report = SyncReport()
        var rekeys = 0
        while let (key, rows) = try store.nextBatch(limit: 500) {
            let body = JSONText.object([("mutations", .array(rows.map(\.mutation)))]).text
            let response = try await authorized(
                APIRequest(
                    method: "POST", path: "/v1/sync", body: Data(body.utf8),
                    headers: [("Idempotency-Key", key)]))
            if response.status == 422, response.problemCode == "idempotency_key_mismatch", rekeys < 3 {
                rekeys += 1
                try store.rekeyBatch(key)
                continue
            }
            guard response.status == 200 else { throw response.problem }
            guard let results = response.json?["results"] as? [[String: Any]], results.count == rows.count else {
                throw SuplashError.invalidResponse("push results do not match the batch")
            }
            let verdicts: [PushVerdict] = results.map { result in
                switch JSONRead.string(result["status"]) {
                case "applied": return .applied
                case "superseded":
                    let current = result["current"] as? [String: Any]
                    return .superseded(
                        current: current.flatMap(JSONRead.text),
                        loggedAtMillis: JSONRead.string(current?["loggedAt"]).flatMap(Timestamp.parse))
                default:
                    let error = result["error"] as? [String: Any]
                    return .rejected(
                        code: JSONRead.string(error?["code"]) ?? "rejected",
                        detail: JSONRead.string(error?["detail"]) ?? "")
                }
            }
            let settled = try store.applyPushResults(rows, verdicts, now: Timestamp.format(Date()))
            report.applied += settled.applied
            report.superseded += settled.superseded
            report.rejected += settled.rejected
        }
        return report
    }

    /// Pulls changes since the stored token (a full snapshot the first time, or after 410
    /// `sync_token_expired` — unsent outbox writes survive it). With `waitSeconds` (1–60) it
    /// long-polls: the server answers as soon as something changes.
    ///
    /// On 410 `sync_history_changed` (the server was restored from a backup, or is another
    /// database) the local data is kept: the full snapshot is compared with it, and every
    /// local water entry (or delete) the snapshot lacks or holds in an older version is
    /// queued in the outbox with its own time, for the server's last write wins to decide
    /// (spec §5). ``sync()`` pushes those at once; `SyncReport.pushedBack` counts them.
    public func pull(waitSeconds: Int = 0) async throws -> SyncReport {
        while let running = pullTask { _ = try? await running.value }
        let task = Task { try await self.pullAll(waitSeconds: waitSeconds) }
        pullTask = task
        defer { pullTask = nil }
        return try await task.value
    }

    private func pullAll(waitSeconds: Int) async throws -> SyncReport {
        var report = SyncReport()
        var wait = min(max(waitSeconds, 0), 60)
        var expiries = 0
        while true {
            let token = try store.meta("sync_token")
            if token == nil, try store.meta("snapshot_in_progress") == nil { try store.beginSnapshot() }
            var query = [("limit", "500")]
            if let token { query.append(("since", token)) }
            if wait > 0 { query.append(("waitSeconds", String(wait))) }
            let response = try await authorized(
                APIRequest(
                    method: "GET", path: "/v1/sync", query: query,
                    timeout: wait > 0 ? configuration.requestTimeout + Double(wait) : nil))
            // A token the server no longer recognises at all (its token secret was replaced,
            // `--new-jwt-secret`) means the same as a changed history.
            let unknownToken = response.status == 400 && response.problemCode == "invalid_sync_token" && token != nil
            if response.status == 410 || unknownToken, expiries < 2 {
                expiries += 1
                report.restartedFromSnapshot = true
                let wasHealing = try store.meta("snapshot_in_progress") == "heal"
                let healing = response.problemCode == "sync_history_changed" || unknownToken || wasHealing
                report.healedServer = report.healedServer || healing
                try store.beginSnapshot(healing: healing)
                wait = 0
                continue
            }
            guard response.status == 200, let json = response.json, let next = JSONRead.string(json["nextToken"]),
                let changes = json["changes"] as? [[String: Any]]
            else {
                throw response.status == 200 ? SuplashError.invalidResponse("bad sync page") : response.problem
            }
            let pulled: [PulledChange] = changes.compactMap { change in
                guard let collection = JSONRead.string(change["collection"]), let id = JSONRead.string(change["id"]) else {
                    return nil
                }
                let data = change["data"] as? [String: Any]
                return PulledChange(
                    collection: collection, id: id.lowercased(), deleted: JSONRead.bool(change["deleted"]) ?? false,
                    data: data.flatMap(JSONRead.text),
                    loggedAtMillis: JSONRead.string(data?["loggedAt"]).flatMap(Timestamp.parse),
                    updatedAtMillis: JSONRead.string(change["updatedAt"]).flatMap(Timestamp.parse))
            }
            let hasMore = JSONRead.bool(json["hasMore"]) ?? false
            report.pushedBack += try store.applyPage(pulled, nextToken: next, hasMore: hasMore)
            report.pulled += pulled.count
            wait = 0
            if !hasMore { return report }
        }
    }

    /// Keeps the store live while the app is in the foreground: pushes, then long-polls
    /// (`waitSeconds`), forever, with backoff on failures; local writes are pushed at once.
    /// Stops on ``stopLiveSync()`` or when the session ends.
    public func startLiveSync(waitSeconds: Int = 30) {
        guard liveTask == nil else { return }
        liveTask = Task { await self.liveLoop(waitSeconds: waitSeconds) }
    }

    /// Stops the loop started by ``startLiveSync(waitSeconds:)``.
    public func stopLiveSync() {
        liveTask?.cancel()
        liveTask = nil
    }

    private func liveLoop(waitSeconds: Int) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                _ = try await push()
                _ = try await pull(waitSeconds: waitSeconds)
                failures = 0
            } catch SuplashError.sessionEnded {
                return
            } catch SuplashError.notSignedIn {
                return
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let pause = configuration.retry.delay(afterAttempt: failures, retryAfter: nil)
                try? await Task.sleep(nanoseconds: UInt64(pause * 1e9))
            }
        }
    }

    private func kickPush() {
        guard liveTask != nil else { return }
        Task { _ = try? await self.push() }
    }

    // MARK: - Batch upload and REST reads

    /// Uploads 1–500 entries in one gzip-compressed `entries:batch` request (HealthKit
    /// backfill). Entries whose `healthKitUUID` the server already holds come back as
    /// `existing`: uploading the same samples twice adds nothing. Retries reuse the
    /// request's Idempotency-Key.
    ///
    /// ```swift
    /// let outcome = try await client.uploadBatch(samples.map {
    ///     WaterEntry(amountMl: $0.ml, loggedAt: $0.start, source: .healthkit, healthKitUUID: $0.uuid)
    /// })
    /// ```
    public func uploadBatch(_ entries: [WaterEntry]) async throws -> BatchOutcome {
        guard (1...500).contains(entries.count) else { throw SuplashError.invalidArgument("a batch holds 1 to 500 entries") }
        let body = JSONText.object([("entries", .array(entries.map { $0.writableJSON(includeID: false) }))]).text
        let response = try await authorized(
            APIRequest(
                method: "POST", path: "/v1/water_logs/me/entries:batch",
                body: Data(body.utf8), headers: [("Idempotency-Key", newUUID())],
                gzip: true))
        guard response.status == 200 else { throw response.problem }
        guard let results = response.json?["results"] as? [[String: Any]] else {
            throw SuplashError.invalidResponse("batch results missing")
        }
        var outcome = BatchOutcome()
        for result in results {
            switch JSONRead.string(result["status"]) {
            case "created": outcome.created += 1
            case "existing": outcome.existing += 1
            default:
                let error = result["error"] as? [String: Any]
                outcome.rejected[JSONRead.int(result["index"]) ?? -1] = JSONRead.string(error?["code"]) ?? "rejected"
            }
        }
        return outcome
    }

    /// An authenticated GET of any read route (summary, stats, bills, export), as JSON bytes.
    ///
    /// ```swift
    /// let summary = try await client.get("/v1/water_logs/me/summary")
    /// ```
    public func get(_ path: String, query: [String: String] = [:]) async throws -> Data {
        let response = try await authorized(
            APIRequest(
                method: "GET", path: path,
                query: query.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        guard (200..<300).contains(response.status) else { throw response.problem }
        return response.body
    }
}

extension SuplashClient {
    /// The current access token (tests and tools that call routes SuplashKit does not wrap).
    func currentAccessToken() throws -> String {
        guard let session else { throw SuplashError.notSignedIn }
        return session.accessToken
    }

    /// Forms (and persists) the next outbox batch without sending it: for crash tests.
    func formBatchForTest() throws -> (key: String, body: String) {
        guard let (key, rows) = try store.nextBatch(limit: 500) else { throw SuplashError.invalidArgument("empty outbox") }
        return (key, JSONText.object([("mutations", .array(rows.map(\.mutation)))]).text)
    }
}
