/// The stamp of a document's last write (spec §5): the writer's clock and device.
/// Every stamped document (entries, bills, days, the profile) stores one, tombstones too.
public struct WriteStamp: Sendable, Equatable {
    /// The client's `clientUpdatedAt` for a sync push, or the server stamp of a REST write;
    /// ms since the epoch.
    public var at: Int64
    /// The writer's `X-Device-ID`; "" when a REST write carried none.
    public var device: String

    public init(at: Int64, device: String) {
        self.at = at
        self.device = device
    }
}

/// The last-write-wins order of spec §5, shared by every store adapter.
///
/// Stamps are ordered by (`at`, `device`): the later clock wins; on equal clocks the
/// lexicographically greater device id wins; on an equal pair (one device, one
/// millisecond) the later arrival wins — so an incoming write wins whenever its stamp is
/// greater than **or equal to** the stored one.
public enum LastWriteWins {
    /// True when a write stamped `incoming` replaces a document stamped `stored`
    /// (nil: nothing stored, the write wins). Equal stamps: the later arrival wins.
    public static func wins(_ incoming: WriteStamp, over stored: WriteStamp?) -> Bool {
        guard let stored else { return true }
        return !(incoming.at < stored.at || (incoming.at == stored.at && incoming.device < stored.device))
    }

    /// The stamp clock (ms) of a REST write at server time `now` (ms) on a document whose
    /// stored stamp clock is `storedAt` (nil: a new document): server time, or 1 ms after the
    /// stored stamp when that is later, so a REST write always supersedes the version it was
    /// made against (spec §5).
    public static func restStampAt(now: Int64, storedAt: Int64?) -> Int64 {
        guard let storedAt else { return now }
        return max(now, storedAt + 1)
    }
}
