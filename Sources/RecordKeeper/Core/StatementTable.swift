/// The prepared statements of a connection's `StaticString` SQL, keyed by the address of the
/// literal: an open-addressing table with linear probing over one allocated buffer.
///
/// Not a `Dictionary<UInt, Statement>`: the first insertion into one makes the Swift runtime
/// build `_DictionaryStorage<UInt, Statement>`'s metadata from its mangled name, which looks up
/// `UInt: Hashable` in every loaded image's conformance records: a quarter of a millisecond,
/// paid by the first read of every process that opens a store (a cold open with its first
/// point read took 1.6 ms against raw SQLite's 0.7). Not an `Array` either, whose storage
/// type's metadata is built at run time too (40 µs). A look-up here is a multiply, a shift,
/// a mask and an address comparison or two.
///
/// A class, not a struct, so that its buffer has one owner and is freed in `deinit`; it is
/// used, like its connection, by one thread at a time.
final class StatementTable {
    private struct Slot {
        var key: UInt
        var statement: Statement?
    }

    /// A power of two, at least twice `count`; empty until the first insertion.
    private var slots = UnsafeMutableBufferPointer<Slot>(start: nil, count: 0)
    private(set) var count = 0

    deinit { removeAll() }

    /// The statement kept for `key`, if any.
    subscript(key: UInt) -> Statement? {
        guard slots.count > 0 else { return nil }
        let mask = slots.count - 1
        var index = Self.start(key, mask)
        while let statement = slots[index].statement {
            if slots[index].key == key { return statement }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Keeps `statement` for `key` (a key is inserted once: callers look it up first).
    func insert(_ statement: Statement, for key: UInt) {
        if (count + 1) * 2 > slots.count { grow() }
        place(Slot(key: key, statement: statement))
        count += 1
    }

    /// Drops every statement (a `Statement` finalizes itself in its `deinit`).
    func removeAll() {
        if let base = slots.baseAddress {
            base.deinitialize(count: slots.count)
            base.deallocate()
        }
        slots = UnsafeMutableBufferPointer(start: nil, count: 0)
        count = 0
    }

    private func place(_ slot: Slot) {
        let mask = slots.count - 1
        var index = Self.start(slot.key, mask)
        while slots[index].statement != nil { index = (index + 1) & mask }
        slots[index] = slot
    }

    private func grow() {
        let old = slots
        slots = UnsafeMutableBufferPointer<Slot>.allocate(capacity: max(32, old.count * 2))
        slots.initialize(repeating: Slot(key: 0, statement: nil))
        guard let base = old.baseAddress else { return }
        for slot in old where slot.statement != nil { place(slot) }
        base.deinitialize(count: old.count)
        base.deallocate()
    }

    /// The first slot for `key`: literals are at least byte-aligned, usually 8 or 16 apart,
    /// so the bits are mixed (Fibonacci hashing) and the high ones taken.
    private static func start(_ key: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }
}
