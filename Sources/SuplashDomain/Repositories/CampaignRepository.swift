/// Admin campaigns (spec §8 `POST /v1/admin/notifications`; docs/reminders.md, "Campaigns").
public protocol CampaignRepository: Sendable {
    /// Stores a campaign; its users are reached by `expandCampaigns`.
    /// - Parameter now: ms since the epoch.
    /// - Throws: `RepositoryError`.
    func createCampaign(id: String, campaign: NewCampaign, now: Int64) throws

    /// The campaign's counts, nil when there is no such campaign.
    /// - Throws: `RepositoryError`.
    func campaignFigures(id: String) throws -> CampaignFigures?

    /// One step of reaching campaigns' users: for the oldest campaign not yet expanded, up to
    /// `limit` users after the last one reached (by id) get a `campaign` reminder due at their
    /// segment's local time (`CampaignSchedule.sendInstant`), when their reminders are on.
    /// Several instances may run it at once (the campaign row is claimed `SKIP LOCKED`).
    /// - Returns: the reminders written.
    /// - Throws: `RepositoryError`.
    func expandCampaigns(now: Int64, limit: Int) throws -> Int
}

/// A campaign as `POST /v1/admin/notifications` describes it (spec §8).
public struct NewCampaign: Sendable, Equatable {
    /// Who gets it, in their own zone.
    public var segment: CampaignSegment
    /// The text by language code (`tr`, `en`, …).
    public var texts: [String: String]
    /// The RFC 3339 text of `sendAt` (its wall time is used in each user's zone), or nil.
    public var sendAt: String?

    /// See the properties.
    public init(segment: CampaignSegment, texts: [String: String], sendAt: String?) {
        self.segment = segment
        self.texts = texts
        self.sendAt = sendAt
    }
}

/// `GET /v1/admin/notifications/{id}` (spec §8): reminders written and not yet sent, sent
/// (handed to the push outbox), and failed (cancelled: the user turned reminders off, or the
/// campaign could not be rendered).
public struct CampaignFigures: Sendable, Equatable {
    public var queued: Int
    public var sent: Int
    public var failed: Int

    /// See the properties.
    public init(queued: Int, sent: Int, failed: Int) {
        self.queued = queued
        self.sent = sent
        self.failed = failed
    }
}
