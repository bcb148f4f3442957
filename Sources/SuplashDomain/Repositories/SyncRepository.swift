import SuplashJSON

/// A document as the change feed and sync push see it (spec §5). One case per
/// collection of the feed.
public enum SyncDocument: Sendable, Equatable {
    /// `profile` — `users/{uid}`.
    case profile(UserProfile)
    /// `water_entries` — `water_logs/{uid}/entries/{id}`.
    case waterEntry(WaterEntry)
    /// `bills` — `invoices/{uid}/bills/{billId}` (a live bill; tombstones carry no document).
    case bill(Bill)
    /// `days` — `water_logs/{uid}/days/{date}`; the change id is the local date `YYYY-MM-DD`.
    case day(DayContext)
    /// `achievements` — `achievements/{uid}`; the change id is the user id. Computed, read-only.
    case achievements(Achievements)
}

/// One change of the feed: a document at its latest version (spec §5 change object).
public struct SyncChange: Sendable, Equatable {
    /// Collection name: `profile`, `water_entries`, `bills`, `days` or `achievements`.
    public var collection: String
    /// Document id: a lower-case UUID (the user id for `profile` and `achievements`), or the
    /// local date `YYYY-MM-DD` for `days`.
    public var id: String
    /// Document version (+1 per write, a delete too).
    public var version: Int64
    /// Server time of the write, ms since the epoch.
    public var updatedAt: Int64
    /// True for a tombstone (`document` is then nil).
    public var deleted: Bool
    /// Position in the database's change sequence (commit order, no gaps).
    public var position: Int64
    /// The live document, nil for a tombstone.
    public var document: SyncDocument?

    public init(
        collection: String, id: String, version: Int64, updatedAt: Int64, deleted: Bool, position: Int64,
        document: SyncDocument?
    ) {
        self.collection = collection
        self.id = id
        self.version = version
        self.updatedAt = updatedAt
        self.deleted = deleted
        self.position = position
        self.document = document
    }
}

/// One page of a user's change feed, read in one read transaction (a consistent snapshot).
public struct SyncPage: Sendable {
    /// At most `limit` changes in position order, each document once.
    public var changes: [SyncChange]
    /// True when more changes follow the last one of `changes`.
    public var hasMore: Bool
    /// The database's id (table `database_identity`).
    public var databaseID: String
    /// The largest purged tombstone position; tokens at or below it are expired.
    public var purgeHorizon: Int64
    /// The database's current change position in the same snapshot.
    public var headPosition: Int64
    /// The user's profile in the same snapshot (nil when the user does not exist): its time
    /// zone and base goal present computed fields (bill `status`, a day's `goalMl`, the
    /// current streak) as the REST routes do.
    public var profile: UserProfile?

    public init(
        changes: [SyncChange], hasMore: Bool, databaseID: String, purgeHorizon: Int64, headPosition: Int64,
        profile: UserProfile? = nil
    ) {
        self.changes = changes
        self.hasMore = hasMore
        self.databaseID = databaseID
        self.purgeHorizon = purgeHorizon
        self.headPosition = headPosition
        self.profile = profile
    }
}

/// What a validated sync mutation writes (spec §5 `POST /v1/sync`).
public enum SyncWrite: Sendable {
    /// Upsert of a water entry with content validated by `EntryValidation.create`.
    case upsertEntry(WaterEntryContent)
    /// Upsert of the profile: a merge patch of its writable fields, applied to the current
    /// profile inside the write transaction by the `profilePatch` closure of the push.
    case patchProfile(JSONValue)
    /// Upsert of a whole bill, validated by `BillValidation.create` (as `POST …/bills`).
    case upsertBill(BillContent)
    /// Upsert of a day context, validated by `DayValidation.put` (as `PUT …/days/{date}`):
    /// the whole day is replaced, an omitted field is cleared.
    case putDay(DayContextContent)
    /// A delete: a tombstone for `water_entries` and `bills`; for `days` it clears the day's
    /// context (as a `PUT` of `{}`); refused for `profile`.
    case delete
}

/// A sync mutation after structural validation.
public struct SyncMutation: Sendable {
    /// `water_entries`, `bills`, `days` or `profile`.
    public var collection: String
    /// The document id: a lower-case UUID, or the local date `YYYY-MM-DD` for `days`.
    public var id: String
    public var write: SyncWrite
    /// The client's clock for last-write-wins, ms since the epoch.
    public var clientUpdatedAt: Int64

    public init(collection: String, id: String, write: SyncWrite, clientUpdatedAt: Int64) {
        self.collection = collection
        self.id = id
        self.write = write
        self.clientUpdatedAt = clientUpdatedAt
    }
}

/// A mutation refused by the store (spec §5 `rejected`): a stable `code` and field errors
/// with pointers into the mutation's `data`.
public struct SyncRejection: Error, Sendable, Equatable {
    public var code: String
    public var errors: [FieldError]

    public init(code: String, errors: [FieldError] = []) {
        self.code = code
        self.errors = errors
    }
}

/// The outcome of one mutation.
public enum SyncMutationOutcome: Sendable {
    /// Written; the change it produced.
    case applied(SyncChange)
    /// Lost last-write-wins; the winning document (nil when the winner is a tombstone).
    case superseded(current: SyncDocument?)
    /// Refused.
    case rejected(SyncRejection)
}

/// The offline-sync store (spec §5): the change feed, the last-write-wins push and the
/// tombstone purge.
public protocol SyncRepository: Sendable {
    /// Up to `limit` changes of `userID` with a position above `after`, in position order,
    /// from every feed source, read in one read transaction. Tombstones (deleted water
    /// entries and bills) are listed only when their position is above `tombstonesAfter`:
    /// `0` lists every tombstone (an incremental pull), `Int64.max` none (the first page of a
    /// full snapshot), the snapshot's start position on its later pages — a snapshot lists
    /// live documents only, but a delete made while it is being paged is a change the client
    /// must see (spec §5).
    func changes(userID: String, after: Int64, limit: Int, tombstonesAfter: Int64) throws -> SyncPage

    /// The database's id (table `database_identity`), carried by sync tokens.
    func databaseID() throws -> String

    /// Applies `mutations` in order, in one write transaction, with last-write-wins on
    /// (`clientUpdatedAt`, `deviceID`); each applied mutation takes a change position.
    /// Entry and day writes recompute daily totals, goals and achievements in the same
    /// transaction. Rejections: `health_kit_uuid_exists`, `bill_exists`, `permission_denied`,
    /// `operation_not_allowed` (profile delete), `read_only_collection` (`achievements`),
    /// `unknown_collection`.
    /// - Parameter profilePatch: applies a profile merge patch (throws `ValidationFailure`).
    /// - Returns: one outcome per mutation and the change position after the transaction.
    func applyMutations(
        userID: String, deviceID: String, now: Int64, mutations: [SyncMutation],
        profilePatch: @escaping @Sendable (JSONValue, UserProfile) throws -> UserProfile
    )
        throws -> (outcomes: [SyncMutationOutcome], headPosition: Int64)

    /// Deletes tombstones (water entries and bills) whose delete happened before
    /// `deletedBefore` (ms) and raises the purge horizon to the largest purged position.
    /// - Returns: how many were purged and the horizon afterwards.
    func purgeTombstones(deletedBefore: Int64) throws -> (purged: Int, horizon: Int64)
}

/// Outcome of one item of `POST /v1/water_logs/{uid}/entries:batch` (spec §4).
public enum BatchItemOutcome: Sendable, Equatable {
    /// A new entry.
    case created(WaterEntry)
    /// The same id with identical content, or a live entry with the same `healthKitUUID`
    /// (including an earlier item of the same batch).
    case existing(WaterEntry)
    /// Refused (`entry_exists`, `entry_deleted`).
    case rejected(code: String)
}

/// A stored Idempotency-Key response (spec §7).
public struct IdempotencyRecord: Sendable, Equatable {
    /// SHA-256 of method, path and SHA-256(body).
    public var fingerprint: [UInt8]
    public var status: Int
    /// Replayed headers (`Content-Type`, `Location`, `ETag`, `Content-Location`).
    public var headers: [[String]]
    public var body: [UInt8]
    /// ms since the epoch.
    public var expiresAt: Int64

    public init(fingerprint: [UInt8], status: Int, headers: [[String]], body: [UInt8], expiresAt: Int64) {
        self.fingerprint = fingerprint
        self.status = status
        self.headers = headers
        self.body = body
        self.expiresAt = expiresAt
    }
}

/// The outcome of claiming an Idempotency-Key in the repository (spec §7).
public enum IdempotencyClaim: Sendable, Equatable {
    /// The caller now holds the key until its lease ends: run the request, then
    /// `completeIdempotencyKey` or `abandonIdempotencyKey` with `token` (the claim time, ms).
    case claimed(token: Int64)
    /// Another request with this key holds an unexpired claim (→ 409 `idempotency_key_in_use`).
    case running
    /// The key's request has completed: replay the record (or 422 when fingerprints differ).
    case completed(IdempotencyRecord)
}

/// Persistence of Idempotency-Key requests (spec §7): completed responses, and — for stores
/// shared by several server instances — the "still running" claim.
///
/// A claim is a row of the same table as the completed record (status 0, empty body,
/// `expires_at` = the lease end), so the primary key (caller, key) decides between two
/// claimers, and completing replaces the claim in place: there is no instant at which
/// neither a claim nor a record exists.
public protocol IdempotencyRepository: Sendable {
    /// The completed record of (`caller`, `key`) that has not expired at `now`, or nil
    /// (a running claim is not a record).
    func idempotencyRecord(caller: String, key: String, now: Int64) throws -> IdempotencyRecord?
    /// Stores (or replaces) a completed record.
    func saveIdempotencyRecord(caller: String, key: String, record: IdempotencyRecord, now: Int64) throws
    /// Deletes records and claims expired at `now`; returns how many.
    func purgeIdempotencyRecords(now: Int64) throws -> Int

    /// Atomically claims (`caller`, `key`): when no unexpired row exists (none, or only an
    /// expired record or claim), stores a running claim with `fingerprint` until `leaseUntil`
    /// and answers `.claimed(token: now)`; otherwise answers `.running` or `.completed`.
    /// - Parameters: `now`, `leaseUntil`: ms since the epoch.
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func claimIdempotencyKey(
        caller: String, key: String, fingerprint: [UInt8], now: Int64,
        leaseUntil: Int64
    ) throws -> IdempotencyClaim
    /// Replaces the claim `token` with the completed `record`. When the claim is gone (its
    /// lease expired and it was purged) the record is stored anyway; when another request
    /// took over the expired claim, or completed, nothing is written.
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func completeIdempotencyKey(caller: String, key: String, token: Int64, record: IdempotencyRecord) throws
    /// Deletes the claim `token` (its request will not be stored; a retry runs again).
    /// Another request's claim or record is left alone.
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func abandonIdempotencyKey(caller: String, key: String, token: Int64) throws
}

/// Water-entry batch import (spec §4 `entries:batch`).
public protocol WaterEntryBatchRepository: Sendable {
    /// Creates `items` (id, content) for `userID` in one write transaction; HealthKit and id
    /// dedupe as for a single create, duplicates inside the batch included.
    func createEntries(
        userID: String, items: [(id: String, content: WaterEntryContent)], deviceID: String?,
        now: Int64
    ) throws -> [BatchItemOutcome]
}

extension SyncRepository {
    /// `changes(userID:after:limit:tombstonesAfter:)` with every tombstone
    /// (`includeTombstones`, an incremental pull) or none (a full snapshot's first page).
    public func changes(userID: String, after: Int64, limit: Int, includeTombstones: Bool) throws -> SyncPage {
        try changes(userID: userID, after: after, limit: limit, tombstonesAfter: includeTombstones ? 0 : Int64.max)
    }
}
