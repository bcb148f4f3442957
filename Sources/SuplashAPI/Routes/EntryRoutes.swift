import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// `water_logs/{uid}/entries` — spec §4 water intake.
enum EntryRoutes {
    static let collection = "/v1/water_logs/{uid}/entries"
    static let item = "/v1/water_logs/{uid}/entries/{entryId}"

    static func register(into router: inout Router<Route>, services: Services, configuration: APIConfiguration) {
        router.add("POST", collection, Route { try create($0, services) })
        router.add("GET", collection, Route { try list($0, services) })
        router.add("GET", item, Route { try get($0, services) })
        router.add("PATCH", item, Route { try patch($0, services) })
        router.add("DELETE", item, Route { try delete($0, services) })
    }

    static func location(_ uid: String, _ id: String) -> String { "/v1/water_logs/\(uid)/entries/\(id)" }

    static func entryResponse(_ status: Int, _ entry: WaterEntry, extra: [(String, String)] = []) -> HTTPResponse {
        .json(status, Presenter.entry(entry), headers: [("ETag", EntityTag.forVersion(entry.version))] + extra)
    }

    static func create(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let deviceID = try request.deviceID()
        let input = try EntryValidation.create(try request.jsonBody(), now: request.now)
        let id = input.id ?? services.newID(now: request.now)
        switch try services.entries.createEntry(
            userID: uid, id: id, content: input.content, deviceID: deviceID,
            now: request.now)
        {
        case .created(let entry):
            return entryResponse(201, entry, extra: [("Location", location(uid, entry.id))])
        case .existing(let entry):
            return entryResponse(200, entry, extra: [("Content-Location", location(uid, entry.id))])
        }
    }

    /// The entry id from the path; a malformed id names no document → 404.
    static func entryID(_ request: APIRequest) throws -> String {
        guard let id = UUIDText.normalized(request.parameter("entryId")) else { throw APIError.notFound }
        return id
    }

    static func get(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        guard let entry = try services.entries.entry(userID: uid, id: try entryID(request)) else { throw APIError.notFound }
        let etag = EntityTag.forVersion(entry.version)
        if EntityTag.ifNoneMatchHits(request.header("If-None-Match"), current: etag) {
            return .empty(304, headers: [("ETag", etag)])
        }
        return entryResponse(200, entry)
    }

    static func patch(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let id = try entryID(request)
        let deviceID = try request.deviceID()
        let body = try request.jsonBody(mergePatch: true)
        let ifMatch = request.header("If-Match")
        let now = request.now
        let entry = try services.entries.updateEntry(
            userID: uid, id: id, deviceID: deviceID, now: now,
            precondition: { EntityTag.ifMatchPasses(ifMatch, current: EntityTag.forVersion($0.version)) },
            { try EntryValidation.applyMergePatch(body, to: $0, now: now) })
        return entryResponse(200, entry)
    }

    static func delete(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let id = try entryID(request)
        let ifMatch = request.header("If-Match")
        try services.entries.deleteEntry(
            userID: uid, id: id, deviceID: try request.deviceID(), now: request.now,
            precondition: { EntityTag.ifMatchPasses(ifMatch, current: EntityTag.forVersion($0.version)) })
        return .empty(204)
    }

    /// Newest first, keyset pages (spec §4): the token binds the user and the from/to filters.
    static func list(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let pageSize = try ListQuery.pageSize(request)
        let from = try ListQuery.instant(request, "from")
        let to = try ListQuery.instant(request, "to")
        let filters = "entries|\(from.map(String.init) ?? "")|\(to.map(String.init) ?? "")"
        var cursor: EntryCursor?
        if let token = request.query["pageToken"] {
            let fields = try services.pageTokens.decode(token, scope: uid, filters: filters, fields: 2)
            guard let loggedAt = Int64(fields[0]) else {
                throw APIError.badRequest(.invalidPageToken, "The page token is invalid or belongs to another query.")
            }
            cursor = EntryCursor(loggedAt: loggedAt, id: fields[1])
        }
        let rows = try services.entries.listEntries(userID: uid, from: from, to: to, after: cursor, limit: pageSize + 1)
        let page = rows.prefix(pageSize)
        var members: [(String, JSONValue)] = [("entries", .array(page.map(Presenter.entry)))]
        if rows.count > pageSize, let last = page.last {
            let token = services.pageTokens.encode(
                scope: uid, filters: filters,
                position: [String(last.content.loggedAt), last.id])
            members.append(("nextPageToken", .string(token)))
        }
        return .json(200, .object(members))
    }
}
