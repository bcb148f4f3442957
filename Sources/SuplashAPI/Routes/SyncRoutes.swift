import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `/v1/sync` (spec §5) and `entries:batch` (spec §4): the offline-sync routes.
enum SyncRoutes {
    static func register(into router: inout Router<Route>, services: Services, configuration: APIConfiguration) {
        router.add("GET", "/v1/sync", Route(deferred: { try pull($0, $1, services) }))
        router.add("POST", "/v1/sync", Route(bodyLimit: configuration.batchBodyLimit) { try push($0, services) })
        router.add(
            "POST", "/v1/water_logs/{uid}/entries:batch",
            Route(bodyLimit: configuration.batchBodyLimit) { try batch($0, services) })
    }

    static func syncServices(_ services: Services) throws(APIError) -> SyncServices {
        guard let sync = services.sync else { throw APIError.unavailable("Sync is not configured.") }
        return sync
    }

    /// The caller's user id; an admin key has no own changes.
    static func userID(_ request: APIRequest, _ services: Services) throws(APIError) -> String {
        switch try services.authenticator.authenticate(request) {
        case .user(let id, _): return id
        case .admin:
            throw APIError(.userRequired, detail: "Sync needs a user's access token, not an admin key.")
        }
    }

    // MARK: - GET /v1/sync

    /// A parsed pull: whose changes, after which position, how many.
    struct PullQuery: Sendable {
        var userID: String
        /// The `since` token as sent, nil for a full snapshot's first page.
        var sinceToken: String?
        var after: Int64
        var limit: Int
        /// The database's head when the full snapshot this pull pages began (from a `y2`
        /// token); nil for an incremental pull and for a snapshot's first page.
        var snapshotStart: Int64?

        /// A full snapshot (any page): live documents only (spec §5).
        var isSnapshot: Bool { sinceToken == nil || snapshotStart != nil }

        /// Tombstones above this position are listed: all of them on an incremental pull,
        /// none on a snapshot's first page, on its later pages those of deletes made after
        /// it began (the client may hold the document from an earlier page).
        var tombstonesAfter: Int64 {
            if sinceToken == nil { return Int64.max }
            return snapshotStart ?? 0
        }
    }

    static func intParameter(
        _ request: APIRequest, _ name: String, in range: ClosedRange<Int>,
        default value: Int
    ) throws(APIError) -> Int {
        guard let raw = request.query[name] else { return value }
        guard raw.utf8.count <= 6, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(raw),
            range.contains(n)
        else {
            throw APIError.badRequest(.invalidQuery, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound).")
        }
        return n
    }

    static func pull(_ request: APIRequest, _ later: DeferredResponse, _ services: Services) throws -> HTTPResponse? {
        let sync = try syncServices(services)
        let uid = try userID(request, services)
        let limit = try intParameter(request, "limit", in: 1...1000, default: 500)
        let wait = try intParameter(request, "waitSeconds", in: 0...60, default: 0)
        var query = PullQuery(userID: uid, sinceToken: request.query["since"], after: 0, limit: limit)
        var sinceDatabase: String?
        if let token = query.sinceToken {
            let decoded = try sync.tokens.decode(token)
            query.after = decoded.position
            query.snapshotStart = decoded.snapshotStart
            sinceDatabase = decoded.databaseID
        }
        let (page, response) = try readPage(query, sinceDatabase: sinceDatabase, sync, now: request.now)
        if !page.changes.isEmpty || wait == 0 { return response }
        let timeoutToken = query.sinceToken ?? sync.tokens.encode(databaseID: page.databaseID, position: page.headPosition)
        let waiter = LongPollWaiter(
            query: query, sinceDatabase: sinceDatabase, timeoutToken: timeoutToken,
            later: later, sync: sync)
        waiter.start(waitSeconds: wait)
        return nil
    }

    /// Reads one page and builds its response. A full snapshot's pages list live documents
    /// only; its `nextToken` carries the snapshot's start (a `y2` token) until the last page.
    /// `now` (ms) is the instant the page's computed fields (bill status, current streak) refer to.
    /// - Throws: 410 `sync_history_changed` for a token of another database or ahead of this
    ///   database's head (a restore from backup); 410 `sync_token_expired` for one from
    ///   before the purge horizon.
    static func readPage(
        _ query: PullQuery, sinceDatabase: String?, _ sync: SyncServices,
        now: Int64
    ) throws -> (SyncPage, HTTPResponse) {
        let page = try sync.repository.changes(
            userID: query.userID, after: query.after, limit: query.limit,
            tombstonesAfter: query.tombstonesAfter)
        if let sinceDatabase {
            guard sinceDatabase == page.databaseID, query.after <= page.headPosition,
                (query.snapshotStart ?? 0) <= page.headPosition
            else {
                throw SyncTokenCodec.historyChanged
            }
            // A snapshot page skips tombstones up to its start, so only a purge past the start matters.
            guard query.after >= page.purgeHorizon || page.purgeHorizon <= (query.snapshotStart ?? -1) else {
                throw SyncTokenCodec.expired
            }
        }
        let position = page.hasMore ? (page.changes.last?.position ?? query.after) : max(page.headPosition, query.after)
        let snapshotStart = query.isSnapshot && page.hasMore ? (query.snapshotStart ?? page.headPosition) : nil
        let token = sync.tokens.encode(databaseID: page.databaseID, position: position, snapshotStart: snapshotStart)
        let presenter = SyncPresenter(profile: page.profile, now: now)
        return (page, pageResponse(page.changes.map(presenter.change), token: token, hasMore: page.hasMore))
    }

    /// `{changes, nextToken, hasMore}` with already presented changes.
    static func pageResponse(_ changes: [JSONValue], token: String, hasMore: Bool) -> HTTPResponse {
        .json(
            200,
            .object([
                ("changes", .array(changes)),
                ("nextToken", .string(token)),
                ("hasMore", .bool(hasMore)),
            ]))
    }

    // MARK: - POST /v1/sync

    static let maxMutations = 500
    /// Every collection a mutation may name (`achievements` only to be refused as read-only).
    static let collectionNames = ["water_entries", "bills", "days", "profile", "achievements"]
    /// Stands for a collection name the server does not have (not a valid name itself).
    static let unknownCollection = "\u{0}unknown"
    /// `clientUpdatedAt` may lead the server clock by at most 5 minutes (ms).
    static let maxClockSkewMillis: Int64 = 5 * 60 * 1000

    /// The `error` problem of a rejected mutation: status and title from `ProblemRegistry`
    /// (a code it lacks falls back to 422 `Rejected`), with a fixed detail per code.
    static func rejection(_ code: String, errors: [FieldError] = []) -> JSONValue {
        let detail =
            switch code {
            case "validation_failed": "One or more fields are invalid; see errors."
            case "clock_skew": "clientUpdatedAt is more than 5 minutes ahead of the server clock."
            case "read_only_collection": "This collection is computed by the server."
            case "unknown_collection": "Writable collections: water_entries, bills, days, profile."
            case "health_kit_uuid_exists": "Another entry holds this healthKitUUID."
            case "bill_exists": "Another live bill has the same provider, subscriberNo and period."
            case "permission_denied": "The profile id must be the caller's id."
            case "operation_not_allowed": "The profile cannot be deleted through sync; use DELETE /v1/users/{uid}."
            default: "The mutation was rejected."
            }
        return APIError(status: 422, code: code, title: "Rejected", detail: detail, fieldErrors: errors).problem
    }

    /// Reads the structure of one mutation and validates its data with the REST rules.
    /// - Returns: the mutation, or the rejection problem.
    static func parseMutation(_ value: JSONValue, now: Int64, userID: String) -> (id: String, Result<SyncMutation, RejectedMutation>) {
        guard case .object(let members) = value else {
            return (
                "",
                .failure(
                    RejectedMutation(
                        code: "validation_failed",
                        errors: [FieldError("", .invalidType, "a mutation must be an object")]))
            )
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["collection", "id", "op", "data", "clientUpdatedAt"], readOnly: [])
        // Collection names are compared code point by code point (spec §1): the known name's
        // own spelling is used from here on, and any other text is an unknown collection.
        let collection = r.string("collection", maxLength: 64, required: true).value.map { raw in
            Self.collectionNames.firstWithSameCodePoints(as: raw) ?? Self.unknownCollection
        }
        let rawID = members.first(where: { $0.0.hasSameCodePoints(as: "id") })?.1.stringValue ?? ""
        // Days are named by their local date (spec §4 `days/{date}`); every other document by a UUID.
        let id =
            collection == "days"
            ? r.formatted(
                "id", required: true, formatMessage: "must be a date YYYY-MM-DD",
                parse: { LocalDate(parsing: $0)?.description }
            ).value
            : r.formatted("id", required: true, formatMessage: "must be a UUID", parse: UUIDText.normalized).value
        let op = r.oneOf("op", ["upsert", "delete"], required: true).value
        let clock = r.formatted(
            "clientUpdatedAt", required: true, formatMessage: "must be an RFC 3339 timestamp",
            parse: RFC3339.parse
        ).value
        let data = r.member("data")
        guard r.errors.isEmpty, let collection, let id, let op, let clock else {
            return (id ?? rawID, .failure(RejectedMutation(code: "validation_failed", errors: r.errors)))
        }
        if collection == "achievements" { return (id, .failure(RejectedMutation(code: "read_only_collection"))) }
        guard ["water_entries", "bills", "days", "profile"].contains(collection) else {
            return (id, .failure(RejectedMutation(code: "unknown_collection")))
        }
        if clock > now + maxClockSkewMillis { return (id, .failure(RejectedMutation(code: "clock_skew"))) }
        if op == "delete" {
            if let data, data != .null {
                return (
                    id,
                    .failure(
                        RejectedMutation(
                            code: "validation_failed",
                            errors: [FieldError("/data", .invalidType, "must be absent for a delete")]))
                )
            }
            return (id, .success(SyncMutation(collection: collection, id: id, write: .delete, clientUpdatedAt: clock)))
        }
        guard let data, case .object(let dataMembers) = data else {
            return (
                id,
                .failure(
                    RejectedMutation(
                        code: "validation_failed",
                        errors: [FieldError("/data", .required, "an upsert needs a data object")]))
            )
        }
        switch collection {
        case "water_entries":
            do {
                let input = try EntryValidation.create(data, now: now)
                if let bodyID = input.id, bodyID != id {
                    return (
                        id,
                        .failure(
                            RejectedMutation(
                                code: "validation_failed",
                                errors: [FieldError("/id", .invalidFormat, "must equal the mutation id")]))
                    )
                }
                return (
                    id,
                    .success(
                        SyncMutation(
                            collection: collection, id: id, write: .upsertEntry(input.content),
                            clientUpdatedAt: clock))
                )
            } catch {
                return (id, .failure(RejectedMutation(code: "validation_failed", errors: error.errors)))
            }
        case "bills", "days":
            return (id, parseDomainUpsert(collection: collection, id: id, data: data, clock: clock))
        default:
            guard id == userID else { return (id, .failure(RejectedMutation(code: "permission_denied"))) }
            return (
                id,
                .success(
                    SyncMutation(
                        collection: collection, id: id, write: .patchProfile(.object(dataMembers)),
                        clientUpdatedAt: clock))
            )
        }
    }

    /// Validates the `data` of a `bills` or `days` upsert with the rules of its REST twin:
    /// `BillValidation.create` (`POST …/bills`; a `data.id` must equal the mutation id) or
    /// `DayValidation.put` (`PUT …/days/{date}`).
    static func parseDomainUpsert(
        collection: String, id: String, data: JSONValue,
        clock: Int64
    ) -> Result<SyncMutation, RejectedMutation> {
        do {
            if collection == "days" {
                let content = try DayValidation.put(data)
                return .success(SyncMutation(collection: collection, id: id, write: .putDay(content), clientUpdatedAt: clock))
            }
            let input = try BillValidation.create(data)
            if let bodyID = input.id, bodyID != id {
                return .failure(
                    RejectedMutation(
                        code: "validation_failed",
                        errors: [FieldError("/id", .invalidFormat, "must equal the mutation id")]))
            }
            return .success(
                SyncMutation(
                    collection: collection, id: id, write: .upsertBill(input.content),
                    clientUpdatedAt: clock))
        } catch {
            return .failure(RejectedMutation(code: "validation_failed", errors: error.errors))
        }
    }

    struct RejectedMutation: Error {
        var code: String
        var errors: [FieldError] = []
    }

    static func push(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let sync = try syncServices(services)
        let uid = try userID(request, services)
        guard let deviceID = try request.deviceID() else {
            throw APIError.badRequest(.deviceIDRequired, "POST /v1/sync needs an X-Device-ID header (a UUID).")
        }
        guard case .object(let members) = try request.jsonBody() else {
            throw APIError.validation([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["mutations"], readOnly: [])
        guard r.errors.isEmpty else { throw APIError.validation(r.errors) }
        guard case .array(let items)? = r.member("mutations") else {
            throw APIError.validation([FieldError("/mutations", .required, "an array of 1 to 500 mutations is required")])
        }
        guard (1...maxMutations).contains(items.count) else {
            throw APIError.validation([FieldError("/mutations", .outOfRange, "must hold 1 to 500 mutations")])
        }
        let parsed = items.map { parseMutation($0, now: request.now, userID: uid) }
        let valid = parsed.compactMap { try? $0.1.get() }
        let timeZones = services.timeZones
        let (outcomes, head) = try sync.repository.applyMutations(
            userID: uid, deviceID: deviceID, now: request.now, mutations: valid,
            profilePatch: { patch, profile in
                try ProfileValidation.applyMergePatch(patch, to: profile, isKnownTimeZone: timeZones.isKnown)
            })
        // Computed fields of superseded documents (bill status, a day's goal) as after this push.
        let presenter = SyncPresenter(profile: try services.users.user(id: uid)?.profile, now: request.now)
        var applied = outcomes.makeIterator()
        var results: [JSONValue] = []
        for (id, result) in parsed {
            var members: [(String, JSONValue)] = [("id", .string(id))]
            switch result {
            case .failure(let rejected):
                members += [("status", .string("rejected")), ("error", rejection(rejected.code, errors: rejected.errors))]
            case .success:
                switch applied.next() {
                case .applied?:
                    members.append(("status", .string("applied")))
                case .superseded(let current)?:
                    members += [("status", .string("superseded")), ("current", current.map(presenter.document) ?? .null)]
                case .rejected(let rejection)?:
                    members += [
                        ("status", .string("rejected")),
                        ("error", Self.rejection(rejection.code, errors: rejection.errors)),
                    ]
                case nil:
                    throw APIError.internalError
                }
            }
            results.append(.object(members))
        }
        let databaseID = try sync.repository.databaseID()
        return .json(
            200,
            .object([
                ("results", .array(results)),
                ("nextToken", .string(sync.tokens.encode(databaseID: databaseID, position: head))),
            ]))
    }

    // MARK: - POST /v1/water_logs/{uid}/entries:batch

    static let maxBatch = 500

    static func batch(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let sync = try syncServices(services)
        let (_, uid) = try Access.authorize(request, services: services)
        let deviceID = try request.deviceID()
        guard case .object(let members) = try request.jsonBody() else {
            throw APIError.validation([FieldError("", .invalidType, "the body must be a JSON object")])
        }
        var r = FieldReader(members: members)
        r.rejectOthers(writable: ["entries"], readOnly: [])
        guard r.errors.isEmpty else { throw APIError.validation(r.errors) }
        guard case .array(let items)? = r.member("entries") else {
            throw APIError.validation([FieldError("/entries", .required, "an array of 1 to 500 entries is required")])
        }
        guard (1...maxBatch).contains(items.count) else {
            throw APIError.validation([FieldError("/entries", .outOfRange, "must hold 1 to 500 entries")])
        }
        var validated: [(index: Int, id: String, content: WaterEntryContent)] = []
        var rejected: [Int: JSONValue] = [:]
        for (index, item) in items.enumerated() {
            do {
                let input = try EntryValidation.create(item, now: request.now)
                validated.append((index, input.id ?? services.newID(now: request.now), input.content))
            } catch {
                rejected[index] = APIError.validation(error.errors).problem
            }
        }
        let outcomes = try sync.batch.createEntries(
            userID: uid, items: validated.map { ($0.id, $0.content) },
            deviceID: deviceID, now: request.now)
        var byIndex: [Int: JSONValue] = rejected.mapValues { error in
            .object([("status", .string("rejected")), ("error", error)])
        }
        for (item, outcome) in zip(validated, outcomes) {
            switch outcome {
            case .created(let e): byIndex[item.index] = .object([("status", .string("created")), ("id", .string(e.id))])
            case .existing(let e): byIndex[item.index] = .object([("status", .string("existing")), ("id", .string(e.id))])
            case .rejected(let code):
                let error = APIError(RepositoryError.conflict(code: code)).problem
                byIndex[item.index] = .object([("status", .string("rejected")), ("id", .string(item.id)), ("error", error)])
            }
        }
        let results: [JSONValue] = items.indices.map { index in
            guard case .object(let m)? = byIndex[index] else { return .null }
            return .object([("index", .number(JSONNumber(index)))] + m)
        }
        return .json(200, .object([("results", .array(results))]))
    }
}

/// A parked `GET /v1/sync?waitSeconds=` (spec §5 long poll): registered with the
/// `LongPollRegistry` under its user, with a deadline timer on the connection's loop.
/// No thread is held while it waits; a wake re-reads the page on the worker pool.
///
/// `@unchecked Sendable`: `timer` and `closed` are guarded by `lock`; the rest is immutable.
final class LongPollWaiter: LongPollParked, @unchecked Sendable {
    private let query: SyncRoutes.PullQuery
    private let sinceDatabase: String?
    private let timeoutToken: String
    private let later: DeferredResponse
    private let sync: SyncServices
    private let lock = NSLock()
    private var timer: TimerID?
    private var closed = false

    init(
        query: SyncRoutes.PullQuery, sinceDatabase: String?, timeoutToken: String, later: DeferredResponse,
        sync: SyncServices
    ) {
        self.query = query
        self.sinceDatabase = sinceDatabase
        self.timeoutToken = timeoutToken
        self.later = later
        self.sync = sync
    }

    /// Arms the deadline and the disconnect handler, registers, and reads once more (a
    /// commit between the caller's read and the registration is not missed). On a worker.
    func start(waitSeconds: Int) {
        let id = later.eventLoop.schedule(after: Double(waitSeconds)) { [self] in
            answer(SyncRoutes.pageResponse([], token: timeoutToken, hasMore: false))
        }
        lock.withLock { timer = id }
        later.onClose { [self] in
            lock.withLock { closed = true }
            sync.longPolls.remove(self, userID: query.userID)
            cancelTimer()
        }
        attempt()
    }

    /// Registers, then reads; answers when the page has changes.
    private func attempt() {
        if later.isDone || lock.withLock({ closed }) { return }
        sync.longPolls.add(self, userID: query.userID)
        do {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let (page, response) = try SyncRoutes.readPage(query, sinceDatabase: sinceDatabase, sync, now: now)
            if !page.changes.isEmpty { answer(response) }
        } catch {
            answer(APIError(error).response())
        }
    }

    func wake() {
        if later.isDone || lock.withLock({ closed }) { return }
        later.onWorker { [self] in attempt() }
    }

    private func answer(_ response: HTTPResponse) {
        sync.longPolls.remove(self, userID: query.userID)
        cancelTimer()
        later.send(response)
    }

    private func cancelTimer() {
        let id = lock.withLock { () -> TimerID? in
            defer { timer = nil }
            return timer
        }
        if let id { later.eventLoop.cancel(id) }
    }
}
