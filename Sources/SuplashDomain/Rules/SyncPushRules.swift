import SuplashJSON

/// A stored document as a sync push sees it: the document, whether it is a tombstone, and
/// the stamp of its last write (spec §5).
public struct Stamped<Document: Sendable>: Sendable {
    /// The stored document (for a tombstone: its last live content, or placeholders).
    public var document: Document
    /// True for a tombstone.
    public var deleted: Bool
    /// The stamp of the last write.
    public var stamp: WriteStamp

    public init(_ document: Document, deleted: Bool = false, stamp: WriteStamp) {
        self.document = document
        self.deleted = deleted
        self.stamp = stamp
    }
}

/// What a store adapter does with one sync mutation (spec §5), decided by `SyncPush`.
public enum PushStep<Document: Sendable>: Sendable {
    /// Write nothing; answer with this outcome (`superseded` or `rejected`).
    case answer(SyncMutationOutcome)
    /// Save `document` (its version, `createdAt` and `updatedAt` already set) as live with
    /// the mutation's stamp, at a new change position.
    case upsert(Document)
    /// Save a tombstone of the mutation's id with `version` and `updatedAt` = now, stamped
    /// with the mutation's stamp, at a new change position. An unknown id gets a new
    /// tombstone row, so an older upsert arriving later loses against it.
    case tombstone(version: Int64)
    /// Write nothing: the mutation is identical to the stored document — the same stamp
    /// (`clientUpdatedAt` and device) and the same content, as a retried push is (spec §5).
    /// Answer `applied` with the stored `version`, `updatedAt` (ms) and `document` (nil for
    /// a tombstone) at the stored change position: no new version, no feed change, no
    /// derived work (daily totals, goals, achievements).
    case unchanged(version: Int64, updatedAt: Int64, document: Document?)
}

/// The last-write-wins decisions of `POST /v1/sync` (spec §5), one function per
/// collection, shared by every store adapter. Pure: the adapter loads the stored document
/// (with its stamp), calls the function, performs the storage-only checks it names
/// (HealthKit and bill uniqueness), saves what it returns and builds the answer with
/// `applied(...)`. A mutation identical to the stored document (`isReplay`) is `.unchanged`:
/// the adapter writes nothing and answers with the stored change position.
public enum SyncPush {
    /// True when a mutation stamped `incoming` repeats the stored write: the same
    /// `clientUpdatedAt` and the same device (spec §5; the caller also compares the content).
    public static func isReplay(_ incoming: WriteStamp, of stored: WriteStamp) -> Bool {
        incoming.at == stored.at && incoming.device.hasSameCodePoints(as: stored.device)
    }

    // MARK: - water_entries

    /// The step of a `water_entries` mutation with id `m.id` against the stored entry
    /// (nil when the id was never seen). A losing mutation is answered `superseded` with
    /// the winner (nil for a tombstone); a winning upsert on a tombstone brings it back.
    /// Before saving an `.upsert`, the adapter rejects `health_kit_uuid_exists` when another
    /// live entry of the user holds the content's `healthKitUUID`.
    /// - Parameters: `now`: server time, ms since the epoch.
    public static func entry(
        _ m: SyncMutation, stored: Stamped<WaterEntry>?, userID: String, stamp: WriteStamp,
        now: Int64
    ) -> PushStep<WaterEntry> {
        if let stored, !LastWriteWins.wins(stamp, over: stored.stamp) {
            return .answer(.superseded(current: stored.deleted ? nil : .waterEntry(stored.document)))
        }
        let current = stored?.document
        if let stored, isReplay(stamp, of: stored.stamp) {
            switch m.write {
            case .upsertEntry(let content) where !stored.deleted && stored.document.content == content:
                return .unchanged(
                    version: stored.document.version, updatedAt: stored.document.updatedAt,
                    document: stored.document)
            case .delete where stored.deleted:
                return .unchanged(version: stored.document.version, updatedAt: stored.document.updatedAt, document: nil)
            default: break
            }
        }
        switch m.write {
        case .upsertEntry(let content):
            return .upsert(
                WaterEntry(
                    id: m.id, userID: userID, content: content, createdAt: current?.createdAt ?? now,
                    updatedAt: now, version: (current?.version ?? 0) + 1, deleted: false))
        case .delete:
            return .tombstone(version: (current?.version ?? 0) + 1)
        case .patchProfile, .upsertBill, .putDay:
            return .answer(.rejected(SyncRejection(code: "invalid_mutation")))
        }
    }

    /// The daily-total deltas (spec §4) of an entry step: the new version appears, the
    /// stored live version (if any) disappears. Empty for an `.answer`.
    public static func entryDeltas(_ step: PushStep<WaterEntry>, stored: Stamped<WaterEntry>?) -> [EntryDelta] {
        var deltas: [EntryDelta] = []
        switch step {
        case .answer, .unchanged: return []
        case .upsert(let entry): deltas.append(EntryDelta(entry.content, sign: 1, id: entry.id))
        case .tombstone: break
        }
        if let stored, !stored.deleted { deltas.append(EntryDelta(stored.document.content, sign: -1, id: stored.document.id)) }
        return deltas
    }

    // MARK: - bills

    /// The step of a `bills` mutation against the stored bill (nil when never seen). Before
    /// saving an `.upsert`, the adapter rejects `bill_exists` when another live bill of the
    /// user holds the same (provider, subscriberNo, period); the losing bill is left as it was.
    /// - Parameters: `now`: server time, ms since the epoch.
    public static func bill(
        _ m: SyncMutation, stored: Stamped<Bill>?, userID: String, stamp: WriteStamp,
        now: Int64
    ) -> PushStep<Bill> {
        if let stored, !LastWriteWins.wins(stamp, over: stored.stamp) {
            return .answer(.superseded(current: stored.deleted ? nil : .bill(stored.document)))
        }
        if let stored, isReplay(stamp, of: stored.stamp) {
            switch m.write {
            case .upsertBill(let content) where !stored.deleted && stored.document.content == content:
                return .unchanged(
                    version: stored.document.version, updatedAt: stored.document.updatedAt,
                    document: stored.document)
            case .delete where stored.deleted:
                return .unchanged(version: stored.document.version, updatedAt: stored.document.updatedAt, document: nil)
            default: break
            }
        }
        let version = (stored?.document.version ?? 0) + 1
        switch m.write {
        case .upsertBill(let content):
            return .upsert(
                Bill(
                    id: m.id, userID: userID, content: content,
                    createdAt: stored?.document.createdAt ?? now, updatedAt: now, version: version))
        case .delete:
            return .tombstone(version: version)
        default:
            return .answer(.rejected(SyncRejection(code: "invalid_mutation")))
        }
    }

    // MARK: - days

    /// The local date and the new context of a `days` mutation (the id is the date;
    /// `delete` clears the context, as a `PUT` of `{}`), or the rejection:
    /// `validation_failed` (pointer `/id`) for an id that is not a date, `invalid_mutation`
    /// for a write of another collection. Checked before anything is read.
    public static func dayTarget(_ m: SyncMutation) -> Result<(date: LocalDate, content: DayContextContent), SyncRejection> {
        guard let date = LocalDate(parsing: m.id) else {
            return .failure(
                SyncRejection(
                    code: "validation_failed",
                    errors: [FieldError("/id", .invalidFormat, "must be a date YYYY-MM-DD")]))
        }
        switch m.write {
        case .putDay(let content): return .success((date, content))
        case .delete: return .success((date, DayContextContent()))
        default: return .failure(SyncRejection(code: "invalid_mutation"))
        }
    }

    /// The step of a `days` mutation for `date` with the new `content` (from `dayTarget`)
    /// against the stored day (nil when the day has no context row). Never a tombstone: a
    /// day is replaced, and its goal, streaks and badges are then recomputed by the adapter.
    /// - Parameters: `now`: server time, ms since the epoch.
    public static func day(
        date: LocalDate, content: DayContextContent, stored: Stamped<DayContext>?,
        stamp: WriteStamp, now: Int64
    ) -> PushStep<DayContext> {
        if let stored, !LastWriteWins.wins(stamp, over: stored.stamp) {
            return .answer(.superseded(current: .day(stored.document)))
        }
        if let stored, isReplay(stamp, of: stored.stamp), stored.document.content == content {
            return .unchanged(
                version: stored.document.version, updatedAt: stored.document.updatedAt,
                document: stored.document)
        }
        return .upsert(
            DayContext(
                date: date, content: content, createdAt: stored?.document.createdAt ?? now,
                updatedAt: now, version: (stored?.document.version ?? 0) + 1))
    }

    // MARK: - profile

    /// The merge patch of a `profile` mutation, or its rejection: `permission_denied` when
    /// the id is not `userID`, `operation_not_allowed` for a delete (or any other write).
    /// Checked before anything is read.
    public static func profileTarget(_ m: SyncMutation, userID: String) -> Result<JSONValue, SyncRejection> {
        guard m.id == userID else { return .failure(SyncRejection(code: "permission_denied")) }
        guard case .patchProfile(let patch) = m.write else {
            return .failure(SyncRejection(code: "operation_not_allowed"))
        }
        return .success(patch)
    }

    /// The step of a `profile` mutation with merge patch `patch` against the stored profile:
    /// `superseded` when it loses, `rejected validation_failed` when `apply` throws a
    /// `ValidationFailure`, else the patched profile as `DocumentWrites.revised` saves it
    /// (identity, email, verification and `createdAt` kept, `updatedAt` = now, version + 1).
    /// - Parameters: `apply`: applies a merge patch to a profile (as `PATCH /v1/users/{uid}`).
    /// - Throws: whatever `apply` throws other than `ValidationFailure`.
    public static func profile(
        patch: JSONValue, stored: Stamped<UserProfile>, stamp: WriteStamp, now: Int64,
        apply: (JSONValue, UserProfile) throws -> UserProfile
    ) throws -> PushStep<UserProfile> {
        let current = stored.document
        if !LastWriteWins.wins(stamp, over: stored.stamp) {
            return .answer(.superseded(current: .profile(current)))
        }
        do {
            let next = DocumentWrites.revised(current, patched: try apply(patch, current), now: now)
            if isReplay(stamp, of: stored.stamp), DocumentWrites.sameWritableFields(next, current) {
                return .unchanged(version: current.version, updatedAt: current.updatedAt, document: current)
            }
            return .upsert(next)
        } catch let failure as ValidationFailure {
            return .answer(.rejected(SyncRejection(code: "validation_failed", errors: failure.errors)))
        }
    }

    // MARK: - Answers

    /// The `applied` outcome of a saved step at change `position`: the change of the
    /// `collection` document `id` (for `days` the date, for `profile` the user id), with
    /// the document for an upsert and none for a tombstone. `.answer` steps answer as they
    /// are. For `.unchanged`, `position` is the stored document's change position and the
    /// change carries the stored version and `updatedAt`. `now`: the server time the step
    /// was decided at, ms.
    public static func applied<Document>(
        _ step: PushStep<Document>, collection: String, id: String, position: Int64,
        now: Int64, wrap: (Document) -> SyncDocument
    ) -> SyncMutationOutcome {
        switch step {
        case .answer(let outcome):
            return outcome
        case .upsert(let document):
            let wrapped = wrap(document)
            return .applied(
                SyncChange(
                    collection: collection, id: id, version: wrapped.version, updatedAt: now,
                    deleted: false, position: position, document: wrapped))
        case .tombstone(let version):
            return .applied(
                SyncChange(
                    collection: collection, id: id, version: version, updatedAt: now,
                    deleted: true, position: position, document: nil))
        case .unchanged(let version, let updatedAt, let document):
            return .applied(
                SyncChange(
                    collection: collection, id: id, version: version, updatedAt: updatedAt,
                    deleted: document == nil, position: position, document: document.map(wrap)))
        }
    }
}

extension SyncDocument {
    /// The wrapped document's version.
    public var version: Int64 {
        switch self {
        case .profile(let p): p.version
        case .waterEntry(let e): e.version
        case .bill(let b): b.version
        case .day(let d): d.version
        case .achievements(let a): a.version
        }
    }
}
