import SuplashDomain
import SuplashJSON
import SuplashSQL
import SuplashStoreRows

/// Admin campaigns (spec §8; docs/reminders.md, "Campaigns"): a campaign row, reached in
/// batches of users by the scheduler (`expandCampaigns`), each user's `campaign` reminder sent
/// like any other by `dispatchDueReminders`.
extension CampaignRepository where Self: SQLStore {
    public func createCampaign(id: String, campaign: NewCampaign, now: Int64) throws {
        let texts = JSONValue.object(campaign.texts.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })
        _ = try transaction { tx in
            try tx.execute(
                CampaignSQL.insert,
                [
                    .text(id), .text(campaign.segment.rawValue), .text(texts.serializedString()), .optionalText(campaign.sendAt),
                    .integer(now),
                ])
        }
    }

    public func campaignFigures(id: String) throws -> CampaignFigures? {
        try reading { c in
            guard try c.queryOne(CampaignSQL.exists, [.text(id)]) != nil else { return nil }
            let row = try c.queryOne(CampaignSQL.figures, [.text(id)])
            return CampaignFigures(
                queued: Int(row?[0].int64 ?? 0), sent: Int(row?[1].int64 ?? 0), failed: Int(row?[2].int64 ?? 0))
        }
    }

    public func expandCampaigns(now: Int64, limit: Int) throws -> Int {
        try transaction { tx in
            guard let campaign = try tx.queryOne(CampaignSQL.claim, []) else { return 0 }
            let id = campaign[0].text ?? ""
            let segment = campaign[1].text.flatMap(CampaignSegment.init(rawValue:)) ?? .all
            let sendAt = campaign[2].text.flatMap(CampaignSchedule.wallTime(ofRFC3339:))
            let users = try tx.query(CampaignSQL.users, [.text(campaign[3].text ?? ""), .integer(Int64(limit))])
            var written = 0
            for row in users {
                let profile = StoreRows.user(row).profile
                guard CampaignSchedule.reaches(profile.reminders), let wake = ClockTime(parsing: profile.wakeTime),
                    let sleep = ClockTime(parsing: profile.sleepTime)
                else { continue }
                let clock = ZoneClocks.shared.clock(profile.timezone)
                let due = CampaignSchedule.sendInstant(
                    segment: segment, sendAt: sendAt, wake: wake, sleep: sleep, clock: clock, now: now)
                try tx.enqueue(
                    CampaignSQL.reminder,
                    [
                        .text(ReminderPlanner.newID()), .text(profile.id), .integer(due),
                        .text(clock.localDate(of: due).description), .text(id), .integer(now),
                    ])
                written += 1
            }
            try tx.execute(
                CampaignSQL.progress,
                [.text(id), .text(users.last.map { StoreRows.user($0).profile.id } ?? ""), .integer(users.count < limit ? 1 : 0)])
            return written
        }
    }
}

enum CampaignSQL {
    /// ?1 id, ?2 segment, ?3 texts, ?4 send at, ?5 now.
    static let insert = SQLText(
        "INSERT INTO campaigns (id, segment, texts, send_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")
    static let exists = SQLText("SELECT 1 FROM campaigns WHERE id = ?1")
    /// `queued, sent, failed` of ?1 (`reminders_campaign`).
    static let figures = SQLText(
        """
        SELECT COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0),
            COALESCE(SUM(CASE WHEN sent_at IS NOT NULL THEN 1 ELSE 0 END), 0),
            COALESCE(SUM(CASE WHEN state = 'cancelled' THEN 1 ELSE 0 END), 0)
        FROM reminders WHERE kind = 'campaign' AND subject_id = ?1
        """)
    /// The oldest campaign still reaching users, locked (`campaigns_expanding`).
    static let claim = SQLText { d in
        """
        SELECT id, segment, send_at, expanded_after FROM campaigns WHERE expanded = 0
        ORDER BY created_at, id LIMIT 1 \(d.forUpdate(skipLocked: true))
        """
    }
    /// The next users by id; ?1 after, ?2 limit.
    static let users = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE id > ?1 ORDER BY id LIMIT ?2")
    /// ?1 id, ?2 user, ?3 due, ?4 local date, ?5 campaign, ?6 now.
    static let reminder = SQLText(
        """
        INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id, created_at, updated_at)
        VALUES (?1, ?2, 'campaign', ?3, 'pending', NULL, ?4, ?5, ?6, ?6)
        """)
    /// ?1 id, ?2 the last user reached ('' = none this time), ?3 1 when done.
    static let progress = SQLText(
        """
        UPDATE campaigns SET expanded_after = CASE WHEN ?2 = '' THEN expanded_after ELSE ?2 END, expanded = ?3
        WHERE id = ?1
        """)
    /// The campaign's texts by language, its segment and `sendAt`; ?1 id.
    static let texts = SQLText("SELECT texts, segment, send_at FROM campaigns WHERE id = ?1")
}
