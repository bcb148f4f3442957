/// The device registry of push delivery (spec §9 "Devices"; docs/push.md).
public protocol DeviceRepository: Sendable {
    /// Registers device `deviceID` of `userID` in one durable transaction: inserts it (or
    /// replaces its fields), replaces its token set with `registration.tokens`, takes each token
    /// away from any other device — of this account or another — that holds it for the same
    /// push type, and when the device is new and the account would hold more than
    /// `DeviceRules.maxDevicesPerUser`, deletes the least recently seen others. `sessionID` is
    /// the registering session (nil for an admin key); when that session is already revoked,
    /// the device is stored without tokens (as its logout would have left it).
    /// - Throws: `RepositoryError.notFound` for an unknown user.
    func registerDevice(
        userID: String, deviceID: String, sessionID: String?, registration: DeviceRegistration, now: Int64
    ) throws -> DeviceRegisterOutcome
    /// The account's devices, most recently seen first (ties by id).
    func devices(userID: String) throws -> [Device]
    /// One device of the account, or nil.
    func device(userID: String, id: String) throws -> Device?
    /// Deletes the device and its tokens; false when the account has no such device.
    func deleteDevice(userID: String, id: String) throws -> Bool
}
