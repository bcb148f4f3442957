/// The REST side of the document history (spec §4 CRUD, §5 stamps), shared by every store
/// adapter: what a `POST` with a client id, a `PATCH`/`PUT` and a `DELETE` decide about
/// the stored row. Pure: the adapter reads the row, calls these, and writes the result.
public enum DocumentWrites {
    /// A `POST` with a client id against the row stored under that id (nil: none):
    /// nil → insert a new document; the same live content → the stored document (an
    /// identical re-post answers 200).
    /// - Throws: `RepositoryError.conflict(deletedCode)` when the id is a tombstone,
    ///   `RepositoryError.conflict(existsCode)` when it holds other content.
    public static func existing<Document: Sendable, Content: Equatable>(
        _ stored: Stamped<Document>?, content: Content, storedContent: (Document) -> Content,
        deletedCode: String, existsCode: String
    ) throws -> Document? {
        guard let stored else { return nil }
        if stored.deleted { throw RepositoryError.conflict(code: deletedCode) }
        if storedContent(stored.document) == content { return stored.document }
        throw RepositoryError.conflict(code: existsCode)
    }

    /// The live document a `PATCH` or `DELETE` acts on.
    /// - Throws: `RepositoryError.notFound` when there is no row or it is a tombstone,
    ///   `RepositoryError.preconditionFailed` when `precondition` (`If-Match`) refuses it.
    public static func target<Document: Sendable>(
        _ stored: Stamped<Document>?,
        precondition: (Document) -> Bool
    ) throws -> Document {
        guard let stored, !stored.deleted else { throw RepositoryError.notFound }
        guard precondition(stored.document) else { throw RepositoryError.preconditionFailed }
        return stored.document
    }

    /// The stamp of a REST write at server time `now` (ms) on a row stamped `stored` (nil:
    /// a new row): `LastWriteWins.restStampAt`, with the request's device id ("" without
    /// `X-Device-ID`).
    public static func stamp(now: Int64, stored: WriteStamp?, deviceID: String?) -> WriteStamp {
        WriteStamp(at: LastWriteWins.restStampAt(now: now, storedAt: stored?.at), device: deviceID ?? "")
    }

    /// `current` with new `content`, `updatedAt` = now (ms) and version + 1 (`PATCH` of an
    /// entry or a bill).
    public static func revised<Document: RevisableDocument>(
        _ current: Document, content: Document.Content,
        now: Int64
    ) -> Document {
        var next = current
        next.content = content
        next.updatedAt = now
        next.version = current.version + 1
        return next
    }

    /// A patched profile as saved: the writable fields of `patched`, with the identity,
    /// email, verification and `createdAt` of `current` kept, `updatedAt` = now (ms) and
    /// version + 1. Used by `PATCH /v1/users/{uid}` and the `profile` sync push.
    public static func revised(_ current: UserProfile, patched: UserProfile, now: Int64) -> UserProfile {
        var next = patched
        next.id = current.id
        next.email = current.email
        next.emailVerified = current.emailVerified
        next.createdAt = current.createdAt
        next.updatedAt = now
        next.version = current.version + 1
        return next
    }

    /// True when `next` (a patched profile as `revised` returns it) holds the same writable
    /// fields as `current`: a write that would change nothing but `updatedAt` and `version`.
    public static func sameWritableFields(_ next: UserProfile, _ current: UserProfile) -> Bool {
        var same = next
        same.updatedAt = current.updatedAt
        same.version = current.version
        return same == current
    }

    /// `PUT …/days/{date}` (a whole replacement) against the stored day's `createdAt` (ms)
    /// and version (nil: no day row): the new day document — `createdAt` kept, `updatedAt`
    /// = now (ms), version + 1 — and whether it is new (201) or replaced (200).
    public static func putDay(
        date: LocalDate, content: DayContextContent, stored: (createdAt: Int64, version: Int64)?,
        now: Int64
    ) -> (day: DayContext, created: Bool) {
        (
            DayContext(
                date: date, content: content, createdAt: stored?.createdAt ?? now, updatedAt: now,
                version: (stored?.version ?? 0) + 1), stored == nil
        )
    }
}

/// A document whose content a REST `PATCH` replaces (entries, bills).
public protocol RevisableDocument: Sendable {
    associatedtype Content: Equatable
    /// The writable content.
    var content: Content { get set }
    /// ms since the epoch of the last write.
    var updatedAt: Int64 { get set }
    /// +1 per write.
    var version: Int64 { get set }
}

extension WaterEntry: RevisableDocument {}
extension Bill: RevisableDocument {}
