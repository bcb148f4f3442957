/// The platform of a registered device (spec §9 "Devices": `platform`).
public enum DevicePlatform: String, Sendable, CaseIterable {
    case ios, ipados, watchos, macos
}

/// The APNs environment a device's tokens belong to (spec §9: `environment`): which origin the
/// sender uses, `api.sandbox.push.apple.com` (development builds) or `api.push.apple.com`.
public enum PushEnvironment: String, Sendable, CaseIterable {
    case sandbox, production
}

/// A push type with a token of its own (spec §9): `alert` and `background` carry the app's
/// APNs token, `complication` a PushKit token (ClockKit complications, watchOS), `widgets` a
/// WidgetKit push token. Matches APNs' `apns-push-type` values of the same names.
public enum PushType: String, Sendable, CaseIterable, Comparable {
    case alert, background, complication, widgets

    /// Declaration order (`alert` first): the order device documents list push types in.
    public static func < (a: PushType, b: PushType) -> Bool { a.rank < b.rank }

    private var rank: Int {
        switch self {
        case .alert: 0
        case .background: 1
        case .complication: 2
        case .widgets: 3
        }
    }
}

/// One push token of a device: its push type and its bytes (sent by clients as hex; APNs
/// device tokens are 32 bytes today, Apple does not promise the length).
public struct PushToken: Sendable, Equatable {
    /// Which pushes this token receives.
    public var pushType: PushType
    /// The token's bytes (8–100 bytes: 16–200 hex digits).
    public var token: [UInt8]

    public init(pushType: PushType, token: [UInt8]) {
        self.pushType = pushType
        self.token = token
    }
}

/// A validated `PUT /v1/users/{uid}/devices/{deviceId}` body (spec §9): everything of the
/// device but its id, with the complete token set that replaces the stored one.
public struct DeviceRegistration: Sendable, Equatable {
    public var platform: DevicePlatform
    /// The app's bundle id (one of `apns.bundleIds` when that list is configured).
    public var bundleID: String
    public var environment: PushEnvironment
    /// The app's locale (BCP 47 language tag, e.g. `tr-TR`), or nil.
    public var locale: String?
    /// The app's version string, or nil.
    public var appVersion: String?
    /// At most one token per push type, in the order sent.
    public var tokens: [PushToken]

    public init(
        platform: DevicePlatform, bundleID: String, environment: PushEnvironment, locale: String? = nil,
        appVersion: String? = nil, tokens: [PushToken]
    ) {
        self.platform = platform
        self.bundleID = bundleID
        self.environment = environment
        self.locale = locale
        self.appVersion = appVersion
        self.tokens = tokens
    }
}

/// A registered device as listed (spec §9: "devices without tokens"): the registration without
/// the token bytes, the push types it holds a token for, and its times (ms since the epoch).
public struct Device: Sendable, Equatable {
    /// The client's `X-Device-ID` (a lower-case UUID).
    public var id: String
    public var platform: DevicePlatform
    public var bundleID: String
    public var environment: PushEnvironment
    public var locale: String?
    public var appVersion: String?
    /// Push types with a token, in `PushType` order (empty after the registering session
    /// logged out).
    public var pushTypes: [PushType]
    /// First registration, ms.
    public var createdAt: Int64
    /// Last registration, ms.
    public var updatedAt: Int64
    /// When the device was last seen (its last registration), ms; eviction removes the least
    /// recently seen.
    public var lastSeenAt: Int64

    public init(
        id: String, platform: DevicePlatform, bundleID: String, environment: PushEnvironment, locale: String?,
        appVersion: String?, pushTypes: [PushType], createdAt: Int64, updatedAt: Int64, lastSeenAt: Int64
    ) {
        self.id = id
        self.platform = platform
        self.bundleID = bundleID
        self.environment = environment
        self.locale = locale
        self.appVersion = appVersion
        self.pushTypes = pushTypes
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSeenAt = lastSeenAt
    }

    /// The device `registration` describes, as stored at `now` (first registered at
    /// `createdAt`).
    public init(id: String, registration r: DeviceRegistration, createdAt: Int64, now: Int64) {
        self.init(
            id: id, platform: r.platform, bundleID: r.bundleID, environment: r.environment, locale: r.locale,
            appVersion: r.appVersion, pushTypes: r.tokens.map(\.pushType).sorted(), createdAt: createdAt, updatedAt: now,
            lastSeenAt: now)
    }
}

/// What a registration did (spec §9: 201 / 200).
public enum DeviceRegisterOutcome: Sendable, Equatable {
    /// A device new to this account (201).
    case created(Device)
    /// The device was registered before: its fields and token set are replaced (200).
    case replaced(Device)

    /// The device as stored.
    public var device: Device {
        switch self {
        case .created(let d), .replaced(let d): d
        }
    }
}

/// The registry's limits (spec §9 "Devices").
public enum DeviceRules {
    /// Devices one account keeps; registering one more evicts the least recently seen.
    public static let maxDevicesPerUser = 20
    /// Hex digits of a token: 16–200 (8–100 bytes), as `APNsRequestBuilder` accepts.
    public static let tokenHexDigits = 16...200
}
