import Foundation
import TestHelpers
import Testing
@testable import LearnerKit
@testable import RecordKeeper

/// "Words due for review" by queries gives what the in-memory rule gives.
@Suite struct LearnerDueWordsTests {
    @Test(arguments: StoreKind.allCases)
    func `the words due by query are the ones the review rule picks`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let repository = RecordKeeperLearnerRepository(store: store)
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            var words: [Word] = []
            for index in 0..<12 {
                let id = "w" + String(format: "%02d", (index * 5) % 12)
                let added: Date = start + Double(index % 4) * 60
                let reviewed: Date? = index % 3 == 0 ? nil : start + Double(index % 2) * 3_600
                words.append(Word(id: id, translation: "t\(index)", addedAt: added, reviewCount: 0, lastReviewedAt: reviewed))
            }
            try await repository.save(words)
            for count in [1, 3, 4, 7, 12, 20] {
                let expected = Word.dueForReview(words, count: count).map(\.id)
                #expect(try await repository.wordsDue(count: count).map(\.id) == expected, "count \(count)")
            }
            #expect(try await repository.wordCount() == 12)
        }
    }
}
