/// The device registry of push delivery (spec §9 "Devices"; docs/push.md).
public protocol DeviceRepository: Sendable {
    /// Registers device `deviceID` of `userID` in one durable transaction: inserts it (or
    /// replaces its fields), replaces its token set with `tokens` (the sealed form of
    /// `registration.tokens`, whose plaintext is not read here), takes each token away from any
    /// other device — of this account or another — that holds it for the same push type (found
    /// by `SealedPushToken.lookupIndexes`, never by the plaintext), and when the device is new and the account would hold more than
    /// `DeviceRules.maxDevicesPerUser`, deletes the least recently seen others. `sessionID` is
    /// the registering session (nil for an admin key); when that session is already revoked,
    /// the device is stored without tokens (as its logout would have left it).
    /// - Throws: `RepositoryError.notFound` for an unknown user.
    func registerDevice(
        userID: String, deviceID: String, sessionID: String?, registration: DeviceRegistration,
        tokens: [SealedPushToken], now: Int64
    ) throws -> DeviceRegisterOutcome
    /// The account's devices, most recently seen first (ties by id).
    func devices(userID: String) throws -> [Device]
    /// One device of the account, or nil.
    func device(userID: String, id: String) throws -> Device?
    /// Deletes the device and its tokens; false when the account has no such device.
    func deleteDevice(userID: String, id: String) throws -> Bool
}

/// A push token as stored (docs/apple.md, "Sealed secrets"): sealed with AES-256-GCM for
/// (`DeviceTokenSealing.table`, `.column`, `DeviceTokenSealing.rowID`) and found by its blind
/// index, never by its plaintext.
public struct SealedPushToken: Sendable, Equatable {
    /// Which pushes the token receives.
    public var pushType: PushType
    /// The envelope `s1.<keyId>.<base64url>` of the token's lower-case hex.
    public var envelope: String
    /// The blind index under the current sealing key (64 lower-case hex digits), stored.
    public var blindIndex: String
    /// The blind index under every configured key, current first: a registration takes the
    /// token away from rows indexed under any of them (during a key rotation).
    public var lookupIndexes: [String]

    /// - Parameters: see the properties.
    public init(pushType: PushType, envelope: String, blindIndex: String, lookupIndexes: [String]) {
        self.pushType = pushType
        self.envelope = envelope
        self.blindIndex = blindIndex
        self.lookupIndexes = lookupIndexes
    }
}

/// Where device tokens are sealed: the sealing context (table, column, row id) their
/// envelopes are bound to.
public enum DeviceTokenSealing {
    /// The sealing context's table.
    public static let table = "device_tokens"
    /// The sealing context's column.
    public static let column = "token"

    /// The sealing context's row id: `<userID>/<deviceID>/<pushType>` (the row's primary key).
    public static func rowID(userID: String, deviceID: String, pushType: PushType) -> String {
        "\(userID)/\(deviceID)/\(pushType.rawValue)"
    }
}

/// A device token row written before tokens were sealed (plaintext bytes), found at start-up
/// to be sealed (or deleted when no sealing key is configured).
public struct PlaintextDeviceToken: Sendable, Equatable {
    /// The account.
    public var userID: String
    /// The device.
    public var deviceID: String
    /// The push type.
    public var pushType: PushType
    /// The token's bytes.
    public var token: [UInt8]

    /// - Parameters: see the properties.
    public init(userID: String, deviceID: String, pushType: PushType, token: [UInt8]) {
        self.userID = userID
        self.deviceID = deviceID
        self.pushType = pushType
        self.token = token
    }
}
