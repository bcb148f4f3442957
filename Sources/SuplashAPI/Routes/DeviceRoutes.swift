import SuplashCrypto
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// The device registry and the settings it checks registrations against (spec §9 "Devices").
public struct DeviceRegistry: Sendable {
    /// Where devices and their push tokens are stored.
    public var repository: any DeviceRepository
    /// `apns.bundleIds`: the bundle ids a device may register with; empty = any well-formed one.
    public var bundleIDs: Set<String>
    /// Seals push tokens and computes their blind indexes (`security.sealingKeyFile`); nil:
    /// no token is kept (devices register, listed without push types; docs/apple.md).
    public var keyring: SealingKeyring?

    /// - Parameters: see the properties.
    public init(repository: any DeviceRepository, bundleIDs: Set<String>, keyring: SealingKeyring?) {
        self.repository = repository
        self.bundleIDs = bundleIDs
        self.keyring = keyring
    }
}

/// `users/{uid}/devices` — spec §9 "Devices": registration (`PUT`, 201 new / 200 replaced),
/// list and read (never the tokens), delete. Push tokens are never echoed, logged or put in a
/// problem (the request log line names the route template, not the path).
enum DeviceRoutes {
    static let collection = "/v1/users/{uid}/devices"
    static let item = "/v1/users/{uid}/devices/{deviceId}"

    static func register(into router: inout Router<Route>, services: Services) {
        router.add("PUT", item, Route { try put($0, services) })
        router.add("GET", item, Route { try get($0, services) })
        router.add("DELETE", item, Route { try delete($0, services) })
        router.add("GET", collection, Route { try list($0, services) })
    }

    static func registry(_ services: Services) throws -> DeviceRegistry {
        guard let devices = services.devices else { throw APIError.unavailable("The device registry is not configured.") }
        return devices
    }

    /// `PUT …/devices/{deviceId}` `{platform, bundleId, environment, locale?, appVersion?,
    /// tokens: [{pushType, token}]}` → 201 with `Location` for a device new to the account, 200
    /// when it replaced the registration; the body is the device without tokens.
    /// - Throws: 400 `invalid_device_id` (the path id is not a UUID), 422 `device_id_mismatch`
    ///   (`X-Device-ID` names another device), 422 `validation_failed`, 403/404 as every
    ///   per-user route.
    static func put(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (principal, uid) = try Access.authorize(request, services: services)
        let registry = try registry(services)
        guard let deviceID = UUIDText.normalized(request.parameter("deviceId")) else {
            throw APIError.badRequest(.invalidDeviceID, "The device id in the path must be a UUID.")
        }
        if let header = try request.deviceID(), header != deviceID {
            throw APIError(.deviceIDMismatch, detail: "X-Device-ID must name the device being registered.")
        }
        let registration = try DeviceValidation.registration(try request.jsonBody(), allowedBundleIDs: registry.bundleIDs)
        var sessionID: String?
        if case .user(_, let sid) = principal { sessionID = sid }
        var sealed: [SealedPushToken] = []
        if let keyring = registry.keyring {
            do {
                sealed = try PushTokenSealing.seal(registration.tokens, userID: uid, deviceID: deviceID, keyring: keyring)
            } catch {
                throw APIError.unavailable("The push tokens could not be sealed.")
            }
        }
        let outcome = try registry.repository.registerDevice(
            userID: uid, deviceID: deviceID, sessionID: sessionID, registration: registration, tokens: sealed,
            now: request.now)
        switch outcome {
        case .created(let device):
            return .json(201, DevicePresenter.device(device), headers: [("Location", location(uid, device.id))])
        case .replaced(let device):
            return .json(200, DevicePresenter.device(device))
        }
    }

    static func location(_ uid: String, _ id: String) -> String { "/v1/users/\(uid)/devices/\(id)" }

    /// The device id from the path of a read or delete; a malformed id names no device → 404.
    static func deviceID(_ request: APIRequest) throws -> String {
        guard let id = UUIDText.normalized(request.parameter("deviceId")) else { throw APIError.notFound }
        return id
    }

    static func get(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let id = try deviceID(request)
        guard let device = try registry(services).repository.device(userID: uid, id: id) else { throw APIError.notFound }
        return .json(200, DevicePresenter.device(device))
    }

    /// `DELETE …/devices/{deviceId}` → 204; 404 when the account has no such device.
    static func delete(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let id = try deviceID(request)
        guard try registry(services).repository.deleteDevice(userID: uid, id: id) else { throw APIError.notFound }
        return .empty(204)
    }

    /// `GET …/devices` → `{devices: [Device]}`, most recently seen first (at most 20: no pages).
    static func list(_ request: APIRequest, _ services: Services) throws -> HTTPResponse {
        let (_, uid) = try Access.authorize(request, services: services)
        let devices = try registry(services).repository.devices(userID: uid)
        return .json(200, .object([("devices", .array(devices.map(DevicePresenter.device)))]))
    }
}

/// The device document (spec §9): never the tokens, only the push types that have one.
enum DevicePresenter {
    /// `{id, platform, bundleId, environment, locale, appVersion, pushTypes, createdAt,
    /// updatedAt, lastSeenAt}` (absent optional fields are `null`).
    static func device(_ d: Device) -> JSONValue {
        .object([
            ("id", .string(d.id)),
            ("platform", .string(d.platform.rawValue)),
            ("bundleId", .string(d.bundleID)),
            ("environment", .string(d.environment.rawValue)),
            ("locale", Presenter.optional(d.locale)),
            ("appVersion", Presenter.optional(d.appVersion)),
            ("pushTypes", .array(d.pushTypes.map { .string($0.rawValue) })),
            ("createdAt", Presenter.time(d.createdAt)),
            ("updatedAt", Presenter.time(d.updatedAt)),
            ("lastSeenAt", Presenter.time(d.lastSeenAt)),
        ])
    }

    /// The account export's `devices` (spec §9: "devices are in export, without tokens"),
    /// `[]` when the registry is not configured.
    static func export(_ uid: String, _ services: Services) throws -> JSONValue {
        .array(try services.devices?.repository.devices(userID: uid).map(device) ?? [])
    }
}
