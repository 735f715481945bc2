import Foundation
import Testing
import RecordKeeper

@Suite struct RecordChangesTests {
    @Test func `assigning data moves a key out of the removals`() {
        var changes = RecordChanges()
        changes["a"] = nil
        #expect(changes.removals == ["a"])
        changes["a"] = Data("1")
        #expect(changes.upserts == ["a": Data("1")])
        #expect(changes.removals.isEmpty)
    }

    @Test func `assigning nil moves a key out of the upserts`() {
        var changes = RecordChanges()
        changes["a"] = Data("1")
        changes["a"] = nil
        #expect(changes.upserts.isEmpty)
        #expect(changes.removals == ["a"])
        #expect(!changes.isEmpty)
    }

    @Test func `a new change is empty`() {
        #expect(RecordChanges().isEmpty)
        #expect(RecordChanges().count == 0)
    }

    @Test func `applying removes named keys and upserts payloads only`() {
        var changes = RecordChanges()
        changes["b"] = nil
        changes["c"] = Data("new")
        let existing = ["a": Data("1"), "b": Data("2"), "c": Data("old")]
        #expect(changes.applying(to: existing) == ["a": Data("1"), "c": Data("new")])
    }

    @Test func `difference applied to the old contents gives the new contents`() {
        let old = ["a": Data("1"), "b": Data("2"), "c": Data("3")]
        let new = ["a": Data("1"), "b": Data("two"), "d": Data("4")]
        let changes = RecordChanges.difference(from: old, to: new)
        #expect(changes.upserts == ["b": Data("two"), "d": Data("4")])
        #expect(changes.removals == ["c"])
        #expect(changes.applying(to: old) == new)
    }

    @Test func `difference of equal contents is empty`() {
        let contents = ["a": Data("1"), "b": Data()]
        #expect(RecordChanges.difference(from: contents, to: contents).isEmpty)
    }

    @Test func `initializer with overlapping keys keeps the upsert`() {
        let changes = RecordChanges(upserts: ["a": Data("1")], removals: ["a", "b"])
        #expect(changes.upserts == ["a": Data("1")])
        #expect(changes.removals == ["b"])
    }

    @Test func `merging a later change lets the later one win`() {
        var first = RecordChanges()
        first["a"] = Data("1")
        first["b"] = nil
        var later = RecordChanges()
        later["a"] = nil
        later["b"] = Data("2")
        first.merge(later)
        #expect(first.upserts == ["b": Data("2")])
        #expect(first.removals == ["a"])
    }
}
