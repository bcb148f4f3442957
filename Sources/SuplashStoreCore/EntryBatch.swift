import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Water-entry batch import (spec §4 `entries:batch`): every item in one transaction under the
/// user's lock, deduplicated by id and HealthKit sample as a single create is — duplicates
/// inside the batch included, since each insert reaches the connection before the next item's
/// checks (on PostgreSQL the queued insert travels with them) — and the daily totals and
/// achievements brought up to date once for the whole batch.
extension WaterEntryBatchRepository where Self: SQLStore {
    public func createEntries(
        userID: String, items: [(id: String, content: WaterEntryContent)], deviceID: String?,
        now: Int64
    ) throws -> [BatchItemOutcome] {
        let list = items.map { BatchItem(id: $0.id, content: $0.content) }
        return try transaction { tx in
            tx.writerDeviceID = deviceID
            guard let profile = try UserLock.lock(tx, userID: userID) else { throw RepositoryError.notFound }
            var outcomes: [BatchItemOutcome] = []
            outcomes.reserveCapacity(list.count)
            var touched: [EntryDelta] = []
            for item in list {
                let content = item.content
                if let stored = EntryStatements.stamped(try tx.pipeline([EntryStatements.fetch(userID: userID, id: item.id, lock: false)])[0]) {
                    do {
                        if let existing = try DocumentWrites.existing(
                            stored, content: content, storedContent: \.content, deletedCode: "entry_deleted",
                            existsCode: "entry_exists")
                        {
                            outcomes.append(.existing(existing))
                        }
                    } catch RepositoryError.conflict(code: let code) {
                        outcomes.append(.rejected(code: code))
                    }
                    continue
                }
                if let sample = content.healthKitUUID,
                    let holder = try tx.queryOne(EntrySQL.liveWithSample, [.text(userID), .text(sample)])
                {
                    outcomes.append(.existing(StoreRows.entry(holder)))
                    continue
                }
                let position = try tx.changePosition(of: .entry(userID, item.id), userID: userID)
                try tx.enqueue(
                    EntrySQL.insert,
                    [
                        .text(userID), .text(item.id), .integer(Int64(content.amountMl)), .integer(content.loggedAt),
                        .text(content.source.rawValue), .optionalText(content.healthKitUUID), .optionalText(content.note),
                        .integer(now), .integer(now), .integer(now), .text(deviceID ?? ""), .integer(position),
                    ])
                outcomes.append(
                    .created(
                        WaterEntry(
                            id: item.id, userID: userID, content: content, createdAt: now, updatedAt: now, version: 1,
                            deleted: false)))
                touched.append(EntryDelta(content, sign: 1, id: item.id))
            }
            try EntryBookkeeping.entriesChanged(tx, userID: userID, profile: profile, deltas: touched, now: now)
            return outcomes
        }
    }
}

/// A `Sendable` pair for the batch's transaction.
private struct BatchItem: Sendable {
    let id: String
    let content: WaterEntryContent
}
