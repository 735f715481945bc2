import Foundation
import RecordKeeperSync
import Testing

/// Pages trimmed to some collections keep what the device needs from them besides the changes:
/// the cursor rules and the compaction horizon.
@Suite struct SyncPullFilterTests {
    private func change(_ collection: String, _ key: String, _ version: Int64) -> SyncPulledChange {
        SyncPulledChange(collection: collection, key: key, value: .payload(Data("v".utf8)), version: SyncServerVersion(version))
    }

    @Test(arguments: [false, true])
    func `a trimmed page keeps its compaction horizon`(hasMore: Bool) async throws {
        let full = SyncPage(
            changes: [change("notes", "a", 5), change("photos", "p", 6), change("notes", "b", 7)],
            cursor: SyncCursor(counter: 9), hasMore: hasMore, horizon: 4)
        let page = try await SyncPullFilter.pull(after: .start, collections: ["notes"]) { _ in full }
        #expect(page.changes.map(\.key) == ["a", "b"])
        #expect(page.horizon == 4)
        #expect(page.cursor == (hasMore ? SyncCursor(counter: 7, position: .init(collection: "notes", key: "b")) : SyncCursor(counter: 9)))
    }
}
